// Draws Plotly figures built on the server (experiments/charts/). A click on a point whose
// customdata is a run id opens that run. Plotly.react keeps the user's zoom across redraws
// (the layouts carry a uirevision).
window.RecoveryLab = (function () {
  // What a figure could not draw, and why (layout.meta.notes): said under it, as text.
  function showNotes(holder, figure) {
    const notes = (figure.layout && figure.layout.meta && figure.layout.meta.notes) || [];
    let said = holder.parentNode.querySelector(".chart-notes");
    if (!notes.length) { if (said) said.remove(); return; }
    if (!said) {
      said = document.createElement("p");
      said.className = "hint chart-notes";
      holder.parentNode.appendChild(said);
    }
    said.textContent = notes.join(" ");
  }

  function draw(holder, figure) {
    if (!holder || !figure || !window.Plotly) return;
    const first = !holder.classList.contains("js-plotly-plot");
    Plotly.react(holder, figure.data, figure.layout, {responsive: true, displaylogo: false}).then(function () {
      // when the chart is on screen (the frame that paints it): `make bench` reads the first one
      if (first) window.requestAnimationFrame(function () { performance.mark("chart-drawn", {detail: holder.id}); });
    });
    showNotes(holder, figure);
    if (first) {
      holder.on("plotly_click", function (event) {
        const runId = event.points[0].customdata;
        if (Number.isInteger(runId)) window.location.href = "/runs/" + runId + "/";
      });
    }
  }

  // Charts wait their turn, one a task, those on screen first: the page and its first chart show
  // while plotly.js lays out the rest, instead of after all of them (a 72-cell experiment has nine).
  // A holder queued again keeps its place and takes the newer figure.
  const queue = [];
  function drawSoon(holder, figure) {
    if (!holder || !figure) return;
    const queued = queue.find(function (entry) { return entry.holder === holder; });
    if (queued) { queued.figure = figure; return; }
    queue.push({holder: holder, figure: figure});
    if (queue.length === 1) window.setTimeout(drawNext, 0);
  }

  // On the screen, or within `reach` screens of its top (1.5: about to be scrolled to).
  function onScreen(holder, reach) {
    const box = holder.getBoundingClientRect();
    return box.bottom > 0 && box.top < window.innerHeight * (reach || 1);
  }

  function drawNext() {
    const index = Math.max(0, queue.findIndex(function (entry) { return onScreen(entry.holder); }));
    const next = queue.splice(index, 1)[0];
    draw(next.holder, next.figure);
    if (queue.length) window.setTimeout(drawNext, 0);
  }

  // Charts off the screen wait until they come near it (a page of many: the run page's six and
  // its flame graph had taken 15 s to draw at once on a busy host). A page whose <body> has
  // data-draw-all draws them all; printing draws those still waiting (reports draw theirs
  // themselves, report.js, before their PDF is taken).
  const waiting = new Map();
  const observer = "IntersectionObserver" in window ? new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) {
      if (!(entry.isIntersecting || entry.intersectionRatio > 0) || !waiting.has(entry.target)) return;
      const figure = waiting.get(entry.target);
      waiting.delete(entry.target);
      observer.unobserve(entry.target);
      drawSoon(entry.target, figure);
    });
  }, {rootMargin: "50% 0px"}) : null;
  function drawWhenSeen(holder, figure) {
    if (!holder || !figure) return;
    if (!observer || document.body.dataset.drawAll !== undefined || onScreen(holder, 1.5)) {
      drawSoon(holder, figure);
      return;
    }
    waiting.set(holder, figure);
    observer.observe(holder);
  }
  window.addEventListener("beforeprint", function () {
    waiting.forEach(function (figure, holder) { observer.unobserve(holder); draw(holder, figure); });
    waiting.clear();
  });

  function drawEmbedded(scriptId, holderId) {
    const source = document.getElementById(scriptId);
    if (source) draw(document.getElementById(holderId), JSON.parse(source.textContent));
  }

  // Poll a JSON endpoint while `more(answer)` says the page is still changing.
  function poll(url, onAnswer, intervalMs) {
    function tick() {
      fetch(url, {headers: {"Accept": "application/json"}, credentials: "same-origin"})
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (answer) {
          if (answer && onAnswer(answer)) window.setTimeout(tick, intervalMs);
          else if (!answer) window.setTimeout(tick, intervalMs * 4);
        })
        .catch(function () { window.setTimeout(tick, intervalMs * 4); });
    }
    window.setTimeout(tick, intervalMs);
  }

  // A holder that names its figure's JSON (data-figure="compare-figure") is drawn in its turn.
  document.querySelectorAll("[data-figure]").forEach(function (holder) {
    const source = document.getElementById(holder.dataset.figure);
    if (source) drawSoon(holder, JSON.parse(source.textContent));
  });

  return {draw: draw, drawSoon: drawSoon, drawWhenSeen: drawWhenSeen, drawEmbedded: drawEmbedded, poll: poll};
})();
