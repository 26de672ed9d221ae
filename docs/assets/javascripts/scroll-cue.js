// Code blocks, display formulas and tables wider than their column scroll sideways: on a phone most code blocks do
// (88 columns take about 700 px; the column is 358 px), and so do the longest formulas and the API's tables. Such a
// block
// * takes the keyboard focus (tabindex="0"), so that a keyboard can scroll it too (axe: scrollable-region-focusable);
// * shows a fade at each edge that hides more of it (the classes sa-scroll-start and sa-scroll-end: a CSS mask in
//   extra.css), so that a reader sees that there is more; an edge loses its fade once the block is scrolled to it.
// A block is checked when its page loads (and after each instant navigation of material), whenever it changes size
// (a ResizeObserver: the window resized or turned, a collapsed block opened) and when fonts arrive (KaTeX's and the
// code's fonts change the width of what is inside). A block that fits gets neither, and loses them if it had them.
(() => {
  "use strict";
  const SELECTOR = "article pre > code, article .jupyter-wrapper pre, article div.arithmatex, " +
    "article .md-typeset__scrollwrap"; // the last: material's wrapper of a wide table
  const seen = new WeakSet();

  function update(el) {
    const over = el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1;
    const start = over && el.scrollLeft > 1;
    const end = over && el.scrollLeft + el.clientWidth < el.scrollWidth - 1;
    el.classList.toggle("sa-scrolls", over);
    el.classList.toggle("sa-scroll-start", start);
    el.classList.toggle("sa-scroll-end", end);
    if (over && !el.hasAttribute("tabindex")) {
      el.setAttribute("tabindex", "0");
      el.dataset.saTabindex = "1"; // ours to take back
    } else if (!over && el.dataset.saTabindex) {
      el.removeAttribute("tabindex");
      delete el.dataset.saTabindex;
    }
  }

  const resized = new ResizeObserver((entries) => entries.forEach((entry) => update(entry.target)));

  function watch() {
    for (const el of document.querySelectorAll(SELECTOR)) {
      if (!seen.has(el)) {
        seen.add(el);
        resized.observe(el);
        el.addEventListener("scroll", () => update(el), { passive: true });
      }
      update(el);
    }
  }

  const all = () => document.querySelectorAll(SELECTOR).forEach(update);
  // After material's document$ (first load, instant navigation) and after javascripts/katex-init.js, which
  // subscribed before this script: the formulas are rendered by then.
  if (typeof document$ !== "undefined") document$.subscribe(() => requestAnimationFrame(watch));
  else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watch);
  else watch();
  document.fonts.addEventListener("loadingdone", all);
})();
