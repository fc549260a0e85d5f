// The run page draws its charts (the seconds before the crash, the restart's timeline) and
// follows its run while it goes: status and progress; once the run has finished, one reload
// brings its metrics, charts and raw files.
(function () {
  const figures = document.getElementById("run-figures");
  if (figures) {
    const found = JSON.parse(figures.textContent);
    // each when it comes near the screen, those on it first (charts.js)
    Object.keys(found).forEach(function (name) {
      window.RecoveryLab.drawWhenSeen(document.getElementById(name + "-chart"), found[name]);
    });
  }
})();
(function () {
  const holder = document.getElementById("run-body");
  if (!holder || holder.dataset.finished === "1") return;
  window.RecoveryLab.poll(holder.dataset.liveUrl, function (answer) {
    if (answer.finished) { window.location.reload(); return false; }
    holder.innerHTML = answer.html;
    const live = answer.run_figures && answer.run_figures.samples;
    const chart = document.getElementById("samples-chart");
    if (live && chart) {
      if (!chart.classList.contains("js-plotly-plot")) chart.innerHTML = "";
      window.RecoveryLab.draw(chart, live);
    }
    return true;
  }, 2000);
})();
