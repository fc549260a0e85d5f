// The series page: each metric's figure (experiments/charts/series.py), drawn into its section.
(function () {
  const source = document.getElementById("series-figures");
  if (!source) return;
  const figures = JSON.parse(source.textContent);
  Object.keys(figures).forEach(function (metric) {
    window.RecoveryLab.draw(document.getElementById("series-" + metric + "-chart"), figures[metric]);
  });
})();
