// Tap to enlarge a figure (the book's figures are inline SVG: <figure class="sa-figure">, drawn at build
// time by tools/site/figures.py).
//
// On a phone the text column is about 358 px wide, and a figure drawn 7 in wide shrinks its 9-pt text to
// about 6 px. A tap on a figure, or its "放大" / "Enlarge" button, opens it in a full-screen <dialog>, drawn
// at a width where its smallest text is at least MIN_PX pixels, or as wide as the screen if that is wider;
// a figure wider than the screen pans (scrolls) inside it. A tap in the dialog, its close button, Escape or
// the browser's back button closes it, and the focus returns to the button that opened it.
//
// Why not mkdocs-glightbox (the lightbox plugin of Material sites): it wraps <img> elements only; an inline
// SVG would need this much code anyway, and GLightbox zooms and pans images, not inline content.
//
// The dialog shows a copy of the figure's SVG without its ids (the copy's references, such as the hatching
// of masked cells, resolve to the figure in the page). Like the figure, it takes the page's text colour
// (the SVG's ink is currentColor), so it follows the palette. No network, no library.
(() => {
  "use strict";
  const MIN_PX = 11; // the smallest text in the dialog, in CSS pixels
  const MAX_ZOOM = 2; // never wider than twice the figure's natural width when the screen is wider
  const WORDS = {
    zh: { open: "放大", label: "放大查看", close: "关闭" },
    en: { open: "Enlarge", label: "Enlarge", close: "Close" },
  };
  const words = () => WORDS[(document.documentElement.lang || "zh").startsWith("zh") ? "zh" : "en"];
  let dialog = null;
  let opener = null;
  let onEntry = false; // the current history entry is the one the dialog added

  // The smallest text of an SVG in screen pixels, per screen pixel of the SVG's width.
  function textPerWidth(svg) {
    const width = svg.getBoundingClientRect().width;
    let smallest = Infinity;
    for (const text of svg.querySelectorAll("text")) {
      const ctm = text.getScreenCTM();
      if (!ctm) continue;
      // Math text (a subscript, 2^6) is one <text> with a <tspan> per run, each with its own size.
      for (const run of [text, ...text.querySelectorAll("tspan")]) {
        if (![...run.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
        const size = parseFloat(getComputedStyle(run).fontSize) * Math.hypot(ctm.a, ctm.b);
        if (size > 0) smallest = Math.min(smallest, size);
      }
    }
    return width > 0 && smallest < Infinity ? smallest / width : 0;
  }

  function naturalWidth(svg) {
    const w = svg.width && svg.width.baseVal;
    return w && w.value > 0 ? w.value : svg.getBoundingClientRect().width;
  }

  function build() {
    dialog = document.createElement("dialog");
    dialog.className = "sa-figure-dialog";
    dialog.innerHTML =
      '<div class="sa-figure-dialog__bar"><span class="sa-figure-dialog__title"></span>' +
      '<button type="button" class="sa-figure-dialog__close md-button"></button></div>' +
      '<div class="sa-figure-dialog__pane" tabindex="0"></div>';
    dialog.addEventListener("click", (event) => {
      // A tap anywhere closes (a drag that pans the figure is a scroll, not a click).
      event.preventDefault();
      close();
    });
    dialog.addEventListener("cancel", (event) => { // Escape
      event.preventDefault();
      close();
    });
    document.body.appendChild(dialog);
  }

  function open(figure, button) {
    const svg = figure.querySelector("svg");
    if (!svg) return;
    if (!dialog || !dialog.isConnected) build();
    const w = words();
    const caption = figure.querySelector("figcaption");
    const number = caption && caption.querySelector(".sa-figure-number");
    const title = (number ? number.textContent : figure.id).trim();
    dialog.setAttribute("aria-label", `${title} ${w.label}`);
    dialog.querySelector(".sa-figure-dialog__title").textContent = title;
    dialog.querySelector(".sa-figure-dialog__close").textContent = w.close;
    const pane = dialog.querySelector(".sa-figure-dialog__pane");
    pane.setAttribute("role", "group");
    pane.setAttribute("aria-label", title);
    const ratio = textPerWidth(svg);
    const copy = svg.cloneNode(true);
    for (const el of [copy, ...copy.querySelectorAll("[id]")]) el.removeAttribute("id");
    pane.replaceChildren(copy);
    // The dialog gives the focus back to what had it when it opened: the button, without a scroll (a scroll
    // would make Material's navigation.tracking rewrite the history entry while the dialog's is being left).
    button.focus({ preventScroll: true });
    dialog.showModal();
    const room = pane.clientWidth - 16;
    const natural = naturalWidth(svg);
    const needed = ratio > 0 ? MIN_PX / ratio : natural;
    const width = Math.max(needed, Math.min(room, natural * MAX_ZOOM));
    copy.style.width = `${Math.ceil(width)}px`;
    copy.style.height = "auto";
    pane.scrollLeft = 0;
    pane.scrollTop = 0;
    opener = button;
    if (!onEntry) history.pushState({ saFigure: figure.id, x: scrollX, y: scrollY }, "");
    onEntry = true;
  }

  function close() {
    if (!dialog || !dialog.open) return;
    dialog.close();
    dialog.querySelector(".sa-figure-dialog__pane").replaceChildren();
    if (opener && opener.isConnected) opener.focus({ preventScroll: true });
  }

  // The back button closes the dialog and stays on the page: the step back from the dialog's history entry stops
  // here (a capturing listener on window runs before Material's). Closed otherwise, the dialog leaves its entry in
  // place (a history.back() of its own raced with Material's navigation.tracking, which rewrites the current
  // entry as the page scrolls, and Material then loaded the page again): the next back step then only leaves it,
  // and the next dialog reuses it.
  addEventListener("popstate", (event) => {
    if (!onEntry) return;
    onEntry = false;
    event.stopImmediatePropagation();
    if (dialog && dialog.open) close();
  }, true);

  function wire() {
    for (const figure of document.querySelectorAll("figure.sa-figure:not(.sa-figure-error)")) {
      if (figure.dataset.zoom) continue;
      const svg = figure.querySelector("svg");
      const caption = figure.querySelector("figcaption");
      if (!svg || !caption) continue;
      figure.dataset.zoom = "on";
      const w = words();
      const button = document.createElement("button");
      button.type = "button";
      button.className = "sa-figure-zoom";
      button.textContent = w.open;
      const number = caption.querySelector(".sa-figure-number");
      button.setAttribute("aria-label", `${(number ? number.textContent : "").trim()} ${w.label}`.trim());
      button.addEventListener("click", () => open(figure, button));
      caption.append(" ", button);
      svg.addEventListener("click", () => open(figure, button));
    }
  }

  // Material's document$ fires on the first load and after each instant navigation.
  // A new page (instant navigation) starts without a dialog entry of its own.
  if (typeof document$ !== "undefined") document$.subscribe(() => { onEntry = false; wire(); });
  else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", wire);
  else wire();
})();
