// stepward's console: live updates of a run page, the copy buttons of links and each moment's
// exact time in the viewer's time zone, the only script (the CSP allows same-origin scripts
// only, none inline). Without it the page still works: reload it, select a link to copy it,
// and read the exact time in UTC.
"use strict";
// A running run's and step's time counts on between updates: each `data-running-since` (the
// start, by the server's clock) beside the server's `data-now` when the page was made.
(function () {
  function words(millis) {
    var seconds = Math.floor(Math.max(0, millis) / 1000);
    if (seconds < 60) {
      return seconds + " s";
    }
    return Math.floor(seconds / 60) + " min " + (seconds % 60) + " s";
  }
  window.setInterval(function () {
    Array.prototype.forEach.call(document.querySelectorAll("[data-running-since]"), function (shown) {
      // When this element (a live update replaces it) was first seen here.
      if (!shown.hasAttribute("data-seen")) {
        shown.setAttribute("data-seen", String(Date.now()));
      }
      var since = Number(shown.getAttribute("data-running-since"));
      var seen = Number(shown.getAttribute("data-seen"));
      var now = Number(shown.getAttribute("data-now")) + (Date.now() - seen);
      shown.textContent = "running for " + words(now - since);
    });
  }, 1000);
})();
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
  // A change that arrives while the page is being fetched fetches it once more afterwards, so
  // the page never stops at what it was before the last change (the end above all).
  var again = false;
  function refresh() {
    if (refreshing) {
      again = true;
      return;
    }
    refreshing = true;
    again = false;
    fetch(window.location.pathname, { credentials: "same-origin" })
      .then(function (answer) {
        if (!answer.ok) {
          throw new Error("the page answered " + answer.status);
        }
        return answer.text();
      })
      .then(function (html) {
        // Every part of the page that changes with the run (its status, its steps) is
        // replaced by the same part of the page as it is now.
        var page = new DOMParser().parseFromString(html, "text/html");
        Array.prototype.forEach.call(document.querySelectorAll("[data-live-part]"), function (part) {
          var fresh = page.getElementById(part.id);
          if (fresh) {
            part.replaceChildren.apply(part, Array.prototype.slice.call(fresh.childNodes));
          }
        });
      })
      .catch(function () {
        say("Live updates stopped; reload the page to see the latest.");
        source.close();
      })
      .finally(function () {
        refreshing = false;
        if (again) {
          refresh();
        }
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
// A copy button beside a link a person sends on (invite, approve and share links): shown only
// where this script runs, it puts the whole link on the clipboard and says so.
(function () {
  Array.prototype.forEach.call(document.querySelectorAll("button.copy[data-copy]"), function (button) {
    button.hidden = false;
    button.addEventListener("click", function () {
      var text = button.getAttribute("data-copy");
      var done = function () {
        button.textContent = "Copied";
      };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(text).then(done, function () {
          button.textContent = "Select the link to copy it";
        });
      }
    });
  });
})();
// Each moment's exact time on hover in the viewer's own time zone (the server writes it in UTC,
// the zone named), also in the parts a live update puts in.
(function () {
  function local(root) {
    Array.prototype.forEach.call(root.querySelectorAll("time[data-local]"), function (moment) {
      var at = new Date(moment.getAttribute("datetime"));
      if (isNaN(at.getTime())) {
        return;
      }
      moment.title = at.toLocaleString(undefined, {
        year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit",
        second: "2-digit", timeZoneName: "short"
      });
      moment.removeAttribute("data-local");
    });
  }
  local(document);
  if (typeof MutationObserver !== "undefined") {
    new MutationObserver(function () { local(document); })
      .observe(document.body, { childList: true, subtree: true });
  }
})();
