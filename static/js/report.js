// A report draws its charts once, static (nothing to hover on paper), at the width of the page,
// then says so on <body> (data-charts-ready="yes", or "no: why"): the PDF is printed after that.
(function () {
  const body = document.body;
  const source = document.getElementById("figures");
  const figures = source ? JSON.parse(source.textContent) : {};
  if (!window.Plotly) { body.dataset.chartsReady = "no: plotly.js did not load"; return; }
  const drawn = Object.keys(figures).map(function (name) {
    const holder = document.getElementById("figure-" + name);
    if (!holder) return Promise.resolve();
    // The legend goes under the axis title, with room for its rows (two entries a row on paper).
    const entries = figures[name].data.filter(function (t) { return t.showlegend !== false && t.name; }).length;
    const bottom = 70 + 22 * Math.ceil(entries / 2);
    const notes = (figures[name].layout.meta && figures[name].layout.meta.notes) || [];
    if (notes.length) {
      const said = document.createElement("p");
      said.className = "hint chart-notes";
      said.textContent = notes.join(" ");
      holder.parentNode.appendChild(said);
    }
    const tall = figures[name].layout.height > 430;  // stacked panels keep their height
    const layout = Object.assign({}, figures[name].layout, {
      width: holder.clientWidth,
      height: (tall ? figures[name].layout.height : 330) + bottom,
      legend: {orientation: "h", yref: "container", y: 0, yanchor: "bottom"},
      margin: Object.assign({}, figures[name].layout.margin, {b: bottom}),
    });
    return Plotly.newPlot(holder, figures[name].data, layout, {staticPlot: true, displaylogo: false});
  });
  Promise.all(drawn).then(
    function () { body.dataset.chartsReady = "yes"; },
    function (error) { body.dataset.chartsReady = "no: " + error; }
  );
})();
