// Math that javascripts/katex-init.js does not see (it renders the .arithmatex elements of the Markdown pages),
// rendered with the vendored KaTeX:
// * the Markdown cells of the lab notebooks (mkdocs-jupyter pages): nbconvert leaves the math as text between
//   $…$, $$…$$, \(…\) or \[…\] and expects MathJax from a CDN; the book loads nothing from the network
//   (mkdocs.yml keeps mkdocs-jupyter's MathJax URL empty);
// * the table of contents: a heading with math becomes a TOC entry whose text is the raw "\(d_k\)".
(function () {
  const MATH = /\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\]|\\\(([\s\S]+?)\\\)|\$(?!\s)((?:\\\$|[^$\n])+?)(?<!\s)\$/g;

  function renderText(node) {
    const text = node.nodeValue;
    MATH.lastIndex = 0;
    if (!MATH.test(text)) return;
    MATH.lastIndex = 0;
    const frag = document.createDocumentFragment();
    let last = 0;
    for (const m of text.matchAll(MATH)) {
      frag.append(text.slice(last, m.index));
      const display = m[1] !== undefined || m[2] !== undefined;
      const tex = m[1] ?? m[2] ?? m[3] ?? m[4];
      const el = document.createElement(display ? "div" : "span");
      el.className = "arithmatex";
      el.dataset.katexDone = "1";
      katex.render(tex, el, { displayMode: display, throwOnError: false });
      frag.append(el);
      last = m.index + m[0].length;
    }
    frag.append(text.slice(last));
    node.replaceWith(frag);
  }

  const WHERE = [".jupyter-wrapper .jp-RenderedMarkdown", ".md-nav__link", ".md-footer__title"].join(", ");

  function renderExtraMath() {
    if (typeof katex === "undefined") return;
    document.querySelectorAll(WHERE).forEach((cell) => {
      if (cell.dataset.katexDone) return;
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT, {
        acceptNode: (n) => (n.parentElement.closest("pre, code, script, style, textarea, .katex")
          ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
      });
      const nodes = [];
      while (walker.nextNode()) nodes.push(walker.currentNode);
      nodes.forEach(renderText);
      cell.dataset.katexDone = "1";
    });
  }

  if (typeof document$ !== "undefined") {
    document$.subscribe(renderExtraMath);
  } else {
    document.addEventListener("DOMContentLoaded", renderExtraMath);
  }
})();
