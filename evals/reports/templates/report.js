// Open the step a finding links to, and filter the timeline. No network, no libraries.
(function () {
  var timeline = document.getElementById("timeline");
  if (!timeline) { return; }
  var steps = Array.prototype.slice.call(timeline.querySelectorAll("details.step"));
  var count = document.getElementById("shown-count");

  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id ? document.getElementById(id) : null;
    if (el && el.tagName === "DETAILS") {
      timeline.classList.remove("only-flagged");
      el.style.display = "";
      el.open = true;
      el.scrollIntoView({ block: "start" });
    }
  }

  function showCount() {
    if (!count) { return; }
    var shown = steps.filter(function (d) { return d.offsetParent !== null; }).length;
    count.textContent = shown + " of " + steps.length + " steps shown";
  }

  function bind(id, handler) {
    var el = document.getElementById(id);
    if (el) { el.addEventListener(el.tagName === "SELECT" ? "change" : "click", handler); }
  }

  bind("expand-all", function () { steps.forEach(function (d) { d.open = true; }); });
  bind("collapse-all", function () { steps.forEach(function (d) { d.open = false; }); });
  bind("only-flagged", function () { timeline.classList.toggle("only-flagged"); showCount(); });
  bind("detector-filter", function (e) {
    var name = e.target.value;
    steps.forEach(function (d) {
      var hit = !name || (" " + d.getAttribute("data-detectors") + " ").indexOf(" " + name + " ") >= 0;
      d.style.display = hit ? "" : "none";
      if (name && hit) { d.open = true; }
    });
    showCount();
  });
  window.addEventListener("hashchange", openTarget);
  openTarget();
  showCount();
})();
