// Live pages: the server tells the page through server-sent events
// (GET events) when what it shows changed; the page is then fetched again
// and its <main> replaced, unless the reviewer is typing in a form (a
// reason being written is never thrown away) or has a step open (then
// only once they close it). Without EventSource the page polls every
// data-refresh seconds; without JavaScript a reload shows the same.
(function () {
  "use strict";
  var body = document.body;
  var secs = parseInt(body.getAttribute("data-refresh"), 10);
  var stream = body.getAttribute("data-events");
  if (!(secs > 0) || !window.fetch || !window.DOMParser) return;
  var stale = false;
  function busy() {
    var a = document.activeElement;
    if (a && (a.tagName === "TEXTAREA" || a.tagName === "INPUT" || a.tagName === "SELECT")) return true;
    var t = document.querySelectorAll("textarea");
    for (var i = 0; i < t.length; i++) if (t[i].value !== "") return true;
    return false;
  }
  function openSteps() {
    var o = document.querySelectorAll("main details[open][id]"), ids = [];
    for (var i = 0; i < o.length; i++) ids.push(o[i].id);
    return ids;
  }
  function refresh() {
    if (document.hidden || busy()) { stale = true; return; }
    stale = false;
    fetch(location.href, { credentials: "same-origin", headers: { "X-Console-Refresh": "1" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html || busy()) { stale = true; return; }
        var next = new DOMParser().parseFromString(html, "text/html").querySelector("main");
        var cur = document.querySelector("main");
        if (!next || !cur || next.innerHTML === cur.innerHTML) return;
        var open = openSteps();
        cur.innerHTML = next.innerHTML;
        for (var i = 0; i < open.length; i++) {
          var d = document.getElementById(open[i]);
          if (d) d.open = true;
        }
      })
      .catch(function () { stale = true; });
  }
  document.addEventListener("visibilitychange", function () { if (!document.hidden && stale) refresh(); });
  document.addEventListener("focusout", function () { if (stale) setTimeout(refresh, 0); });
  if (stream && window.EventSource) {
    var es = new EventSource(stream);
    es.addEventListener("change", refresh);
    es.addEventListener("end", function () { es.close(); });
  } else {
    setInterval(refresh, secs * 1000);
  }
})();
