// Live refresh: every data-refresh seconds the page is fetched again and
// its <main> replaced when it changed, unless the reviewer is typing in a
// form (a reason being written is never thrown away).
(function () {
  "use strict";
  var secs = parseInt(document.body.getAttribute("data-refresh"), 10);
  if (!(secs > 0) || !window.fetch || !window.DOMParser) return;
  function busy() {
    var a = document.activeElement;
    if (a && (a.tagName === "TEXTAREA" || a.tagName === "INPUT" || a.tagName === "SELECT")) return true;
    var t = document.querySelectorAll("textarea");
    for (var i = 0; i < t.length; i++) if (t[i].value !== "") return true;
    return false;
  }
  function tick() {
    if (document.hidden || busy()) return;
    fetch(location.href, { credentials: "same-origin", headers: { "X-Console-Refresh": "1" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html || busy()) return;
        var next = new DOMParser().parseFromString(html, "text/html").querySelector("main");
        var cur = document.querySelector("main");
        if (next && cur && next.innerHTML !== cur.innerHTML) cur.innerHTML = next.innerHTML;
      })
      .catch(function () {});
  }
  setInterval(tick, secs * 1000);
})();
