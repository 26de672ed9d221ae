// The language switcher links every page to the same page in the other language
// (tools/site/hooks.py), and material also writes those links into the head as
// <link rel="alternate" hreflang>. Material's script expects such a link to name a
// language's root: it requests "sitemap.xml" below each one to look the page up there.
// Below a page there is no sitemap, so each request would fail with a 404. This answers
// those requests with an empty sitemap instead; material then simply follows the link,
// with a full page load (each language has its own search index). The sitemaps of the
// language roots themselves are requested as usual.
(function () {
  const roots = JSON.parse(document.getElementById("__language_roots").textContent)
    .map((root) => new URL("sitemap.xml", new URL(root, location.href)).href);
  const empty = "data:application/xml," + encodeURIComponent(
    '<?xml version="1.0" encoding="UTF-8"?>' +
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>');
  const open = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (method, url, ...rest) {
    const target = new URL(`${url}`, location.href).href;
    const below = [...document.querySelectorAll("link[rel=alternate][hreflang]")]
      .map((link) => new URL("sitemap.xml", link.href).href);
    const replaced = below.includes(target) && !roots.includes(target) ? empty : url;
    return open.call(this, method, replaced, ...rest);
  };
})();
