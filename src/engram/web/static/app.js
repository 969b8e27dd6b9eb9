// Progressive enhancement only: every page works without it.
"use strict";
document.documentElement.classList.add("js");
document.addEventListener("submit", function (e) {
  var form = e.target;
  var question = form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) e.preventDefault();
});
document.addEventListener("change", function (e) {
  var form = e.target.form;
  if (form && form.hasAttribute("data-autosubmit")) form.submit();
});
document.addEventListener("click", function (e) {
  var id = e.target.getAttribute && e.target.getAttribute("data-copy");
  if (!id || !navigator.clipboard) return;
  navigator.clipboard.writeText(document.getElementById(id).textContent.trim()).then(function () {
    e.target.textContent = "Copied";
  });
});
