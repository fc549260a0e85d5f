// Behaviour every page may use, kept out of the markup (the site's policy runs no inline script):
// data-confirm on a form asks before it is sent; data-print prints the page.
document.querySelectorAll("form[data-confirm]").forEach(function (form) {
  form.addEventListener("submit", function (event) {
    if (!window.confirm(form.dataset.confirm)) event.preventDefault();
  });
});
document.querySelectorAll("[data-print]").forEach(function (button) {
  button.addEventListener("click", function () { window.print(); });
});
