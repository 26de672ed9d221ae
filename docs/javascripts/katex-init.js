// Render the math that pymdownx.arithmatex (generic mode) leaves in the page, with the vendored KaTeX.
// `document$` is mkdocs-material's observable: it fires on the first load and after each instant navigation.
function renderMath() {
  document.querySelectorAll(".arithmatex").forEach((el) => {
    if (el.dataset.katexDone) return;
    const tex = el.textContent.trim();
    const display = tex.startsWith("\\[");
    const body = tex.replace(/^\\[[(]/, "").replace(/\\[\])]$/, "");
    katex.render(body, el, { displayMode: display, throwOnError: false });
    el.dataset.katexDone = "1";
  });
}
if (typeof document$ !== "undefined") {
  document$.subscribe(renderMath);
} else {
  document.addEventListener("DOMContentLoaded", renderMath);
}
