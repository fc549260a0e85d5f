// Draws the figure embedded by the page (json_script) and opens a run when a point is clicked.
(function () {
  const holder = document.getElementById("recovery-chart");
  const source = document.getElementById("recovery-figure");
  if (!holder || !source || !window.Plotly) return;
  const figure = JSON.parse(source.textContent);
  if (!figure.data.length) { holder.style.display = "none"; return; }
  Plotly.newPlot(holder, figure.data, figure.layout, {responsive: true, displaylogo: false});
  holder.on("plotly_click", function (event) {
    const runId = event.points[0].customdata;
    if (runId) window.location.href = "/runs/" + runId + "/";
  });
})();
