// The explore page: its chart, and a changed choice redraws at once (empty fields stay out of
// the address).
window.RecoveryLab.drawEmbedded("explore-figure", "explore-chart");
document.querySelectorAll("#explore-form select, #explore-form input[type=checkbox]").forEach(function (field) {
  field.addEventListener("change", function () { field.form.requestSubmit(); });
});
const exploreForm = document.getElementById("explore-form");
if (exploreForm) {
  exploreForm.addEventListener("submit", function () {
    this.querySelectorAll("input, select").forEach(function (field) { if (!field.value) field.disabled = true; });
  });
}
