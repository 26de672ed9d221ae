// Math in the Markdown cells of the lab notebooks (mkdocs-jupyter pages), rendered with the vendored KaTeX.
// nbconvert leaves it as text between $…$, $$…$$, \(…\) or \[…\] and expects MathJax from a CDN; the book
// loads nothing from the network (mkdocs.yml keeps mkdocs-jupyter's MathJax URL empty), so KaTeX renders it here.
(function () {
  const MATH = /\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\]|\\\(([\s\S]+?)\\\)|\$(?!\s)((?:\\\$|[^$\n])+?)(?<!\s)\$/g;
  const SKIP = new Set(["PRE", "CODE", "SCRIPT", "STYLE", "TEXTAREA"]);

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

  function renderNotebookMath() {
    if (typeof katex === "undefined") return;
    document.querySelectorAll(".jupyter-wrapper .jp-RenderedMarkdown").forEach((cell) => {
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
    document$.subscribe(renderNotebookMath);
  } else {
    document.addEventListener("DOMContentLoaded", renderNotebookMath);
  }
})();
