// stepward's console: live updates of a run page, the only script (the CSP allows
// same-origin scripts only, none inline). Without it the page still works: reload it.
"use strict";
(function () {
  var live = document.querySelector("[data-live]");
  if (!live || typeof EventSource === "undefined") {
    return;
  }
  var note = document.getElementById("live-note");
  var source = new EventSource(live.getAttribute("data-live"));
  var refreshing = false;
  function say(text) {
    if (note) {
      note.textContent = text;
    }
  }
  function refresh() {
    if (refreshing) {
      return;
    }
    refreshing = true;
    fetch(window.location.pathname, { credentials: "same-origin" })
      .then(function (answer) {
        if (!answer.ok) {
          throw new Error("the page answered " + answer.status);
        }
        return answer.text();
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById(live.id);
        if (fresh) {
          live.replaceChildren.apply(live, Array.prototype.slice.call(fresh.childNodes));
        }
      })
      .catch(function () {
        say("Live updates stopped; reload the page to see the latest.");
        source.close();
      })
      .finally(function () {
        refreshing = false;
      });
  }
  source.addEventListener("changed", refresh);
  source.addEventListener("ended", function () {
    refresh();
    say("The run has ended.");
    source.close();
  });
  source.addEventListener("closed", function (event) {
    say(event.data || "Live updates stopped; reload the page to see the latest.");
    source.close();
  });
  source.onerror = function () {
    say("Live updates paused; reconnecting.");
  };
})();
