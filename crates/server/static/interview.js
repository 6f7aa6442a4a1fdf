// stepward's interview page: while a message is on its way to the assistant, say so and keep
// the form from being sent twice. The form posts as it would without this script (the CSP
// allows same-origin scripts only, none inline), so the page works without it.
"use strict";
(function () {
  var forms = document.querySelectorAll("form[data-interview]");
  Array.prototype.forEach.call(forms, function (form) {
    form.addEventListener("submit", function (event) {
      if (form.getAttribute("data-sending") === "yes") {
        event.preventDefault();
        return;
      }
      form.setAttribute("data-sending", "yes");
      var button = form.querySelector("button[type=submit]");
      if (button) {
        button.setAttribute("aria-disabled", "true");
      }
      var status = form.querySelector("[role=status]");
      if (status) {
        status.textContent = "The assistant is reading your message and checking what it proposes. This can take a minute.";
      }
    });
  });
  var end = document.getElementById("chat-end");
  if (end && window.location.hash === "#chat-end") {
    end.scrollIntoView();
  }
})();
