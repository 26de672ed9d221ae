// The language switcher links every page to the same page in the other language
// (tools/mkdocs_hooks.py), and material also writes those links into the head as
// <link rel="alternate" hreflang>. Material's script expects such a link to name a
// language's root: it fetches "sitemap.xml" below each one to look the page up there.
// Below a page there is no sitemap, so each fetch would fail with a 404. This answers
// those fetches with an empty sitemap instead; material then simply follows the
// link, with a full page load (the other language has its own search index).
// The sitemaps of the language roots themselves are fetched as usual.
(function () {
  const roots = JSON.parse(document.getElementById("__language_roots").textContent)
    .map((root) => new URL("sitemap.xml", new URL(root, location.href)).href);
  const empty = '<?xml version="1.0" encoding="UTF-8"?>' +
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>';
  const fetch = window.fetch;
  window.fetch = function (input, init) {
    const url = new URL(typeof input === "string" ? input : input.url, location.href);
    const below = [...document.querySelectorAll("link[rel=alternate][hreflang]")]
      .map((link) => new URL("sitemap.xml", link.href).href);
    if (below.includes(url.href) && !roots.includes(url.href)) {
      return Promise.resolve(new Response(empty, { headers: { "Content-Type": "application/xml" } }));
    }
    return fetch.call(this, input, init);
  };
})();
