// Tap to enlarge a figure (the book's figures are inline SVG: <figure class="sa-figure">, drawn at build
// time by tools/site/figures.py).
//
// On a phone the text column is about 358 px wide. A figure may come in two variants, a wide one and a narrow one
// drawn for such a column (stacked panels, tools/site/figures.py), of which a media query shows one (extra.css).
// A tap on a figure, or its "放大" / "Enlarge" button, opens the variant shown in a full-screen <dialog>, with its
// caption, drawn at a width where its smallest text is at least MIN_PX pixels, or as wide as the screen if that
// is wider; a figure wider than the screen pans (scrolls) inside it. A tap in the dialog, its close button, Escape
// or the browser's back button closes it, and the focus returns to the button that opened it. The back button
// leaves the page where it was: its scroll position, and the page itself (see the popstate note below).
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
  let place = null; // the page's scroll position when the dialog opened

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

  // The SVG a reader sees of a figure: of its variants, the one the page's media query shows.
  function shown(figure) {
    const svgs = [...figure.querySelectorAll(":scope > svg")];
    return svgs.find((svg) => svg.getClientRects().length) || svgs[0] || null;
  }

  function build() {
    dialog = document.createElement("dialog");
    dialog.className = "sa-figure-dialog";
    dialog.setAttribute("aria-describedby", "sa-figure-dialog-caption");
    dialog.innerHTML =
      '<div class="sa-figure-dialog__bar"><span class="sa-figure-dialog__title"></span>' +
      '<button type="button" class="sa-figure-dialog__close md-button"></button></div>' +
      '<div class="sa-figure-dialog__pane" tabindex="0"><div class="sa-figure-dialog__figure"></div>' +
      '<p class="sa-figure-dialog__caption" id="sa-figure-dialog-caption"></p></div>';
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
    const svg = shown(figure);
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
    copy.removeAttribute("class");
    dialog.querySelector(".sa-figure-dialog__figure").replaceChildren(copy);
    // The caption under the figure, without its number (the bar shows it) and without the Enlarge button.
    const text = caption ? caption.cloneNode(true) : document.createElement("span");
    text.querySelectorAll(".sa-figure-number, .sa-figure-zoom").forEach((el) => el.remove());
    dialog.querySelector(".sa-figure-dialog__caption").textContent = text.textContent.trim();
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
    place = { x: scrollX, y: scrollY };
    if (!onEntry) history.pushState({ saFigure: figure.id, x: scrollX, y: scrollY }, "");
    onEntry = true;
  }

  function close() {
    if (!dialog || !dialog.open) return;
    dialog.close();
    dialog.querySelector(".sa-figure-dialog__figure").replaceChildren();
    if (opener && opener.isConnected) opener.focus({ preventScroll: true });
  }

  // The back button closes the dialog and stays on the page. Material's instant navigation renders the page again,
  // from the top, on every step back or forward (popstate), even within one page; listeners of one event on window
  // run in the order they were added, whether capturing or not, and material's comes first from its bundle. So a
  // listener added in the page's head (overrides/main.html) runs first, and asks window.__saBack: a step back
  // from the dialog's history entry, or forward onto it, is the dialog's, and stops there. Closed otherwise (a
  // tap, Escape), the dialog leaves its entry in place (a history.back() of its own raced with material's
  // navigation.tracking, which rewrites the current entry as the page scrolls): the next back step then only
  // leaves it, and the next dialog reuses it.
  // The browser restores the scroll position it kept for the entry it steps to (or scrolls to its #fragment, which
  // material's navigation.tracking set to the heading in view) before the popstate event: the dialog puts the page
  // back where it was when it opened.
  window.__saBack = (event) => {
    const arriving = !!(event.state && event.state.saFigure);
    if (!onEntry && !arriving) return false;
    onEntry = arriving;
    if (dialog && dialog.open) {
      close();
      if (place) {
        const { x, y } = place;
        scrollTo(x, y);
        requestAnimationFrame(() => scrollTo(x, y));
      }
    }
    return true;
  };

  function wire() {
    for (const figure of document.querySelectorAll("figure.sa-figure:not(.sa-figure-error)")) {
      if (figure.dataset.zoom) continue;
      const svg = figure.querySelector("svg");
      const caption = figure.querySelector("figcaption");
      if (!svg || !caption) continue;
      figure.dataset.zoom = "on";
      const svgs = figure.querySelectorAll(":scope > svg");
      const w = words();
      const button = document.createElement("button");
      button.type = "button";
      button.className = "sa-figure-zoom";
      button.textContent = w.open;
      const number = caption.querySelector(".sa-figure-number");
      button.setAttribute("aria-label", `${(number ? number.textContent : "").trim()} ${w.label}`.trim());
      button.addEventListener("click", () => open(figure, button));
      caption.append(" ", button);
      svgs.forEach((one) => one.addEventListener("click", () => open(figure, button)));
    }
  }

  // Material's document$ fires on the first load and after each instant navigation.
  // A new page (instant navigation) starts without a dialog entry of its own.
  if (typeof document$ !== "undefined") document$.subscribe(() => { onEntry = false; wire(); });
  else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", wire);
  else wire();
})();
