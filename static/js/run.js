// The run page follows its run while it goes: status and progress; once the run has finished,
// one reload brings its metrics and raw files.
(function () {
  const holder = document.getElementById("run-body");
  if (!holder || holder.dataset.finished === "1") return;
  window.RecoveryLab.poll(holder.dataset.liveUrl, function (answer) {
    if (answer.finished) { window.location.reload(); return false; }
    holder.innerHTML = answer.html;
    return true;
  }, 2000);
})();
