// The experiment page: draws every chart (on-screen ones first, one a task), and while runs go keeps tables, progress and charts
// current from the page's JSON endpoint without reloading (zoom and hidden traces are kept).
(function () {
  const lab = window.RecoveryLab;
  const charts = document.getElementById("charts");
  const wide = JSON.parse(document.getElementById("wide-figures").textContent);

  function drawAll(figures) {
    Object.keys(figures).forEach(function (name) {
      let holder = document.getElementById("figure-" + name);
      if (!holder) {
        const empty = charts.querySelector(".empty");
        if (empty) empty.remove();
        const section = document.createElement("section");
        section.className = "chart" + (wide.indexOf(name) >= 0 ? " wide" : "");
        holder = document.createElement("div");
        holder.className = "figure";
        holder.id = "figure-" + name;
        holder.dataset.figure = name;
        section.appendChild(holder);
        charts.appendChild(section);
      }
      lab.drawSoon(holder, figures[name]);
    });
  }

  drawAll(JSON.parse(document.getElementById("figures").textContent));
  const live = document.getElementById("live");
  if (live.dataset.inProgress !== "1") return;
  lab.poll(live.dataset.liveUrl, function (answer) {
    document.getElementById("experiment-progress").innerHTML = answer.fragments.progress;
    document.getElementById("experiment-summary").innerHTML = answer.fragments.summary;
    document.getElementById("experiment-findings").innerHTML = answer.fragments.findings;
    document.getElementById("experiment-runs").innerHTML = answer.fragments.runs;
    drawAll(answer.figures);
    live.dataset.inProgress = answer.in_progress ? "1" : "0";
    return answer.in_progress;
  }, 3000);
})();
