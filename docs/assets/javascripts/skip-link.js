// The skip link ("跳转至" / "Skip to content", the first thing a Tab reaches) moves the keyboard focus to the page's
// content. Material's own link points at the first heading and its instant navigation scrolls there, but the
// focus stays where it was: after an instant navigation, the next Tab went on from the link clicked in the
// navigation, and chapter 4's first link in the text was 43 Tabs away. This listener (on the document, capturing)
// runs before material's (on the body, bubbling): it focuses the heading, made focusable by script only
// (tabindex="-1"), which brings it into view, and material does nothing more.
(() => {
  "use strict";
  document.addEventListener("click", (event) => {
    const link = event.target instanceof Element && event.target.closest("a.md-skip");
    if (!link) return;
    const id = decodeURIComponent(new URL(link.href, location.href).hash.slice(1));
    const target = (id && document.getElementById(id)) || document.querySelector("article h1, article");
    if (!target) return;
    event.preventDefault();
    event.stopPropagation();
    if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
    target.focus();
  }, true);
})();
