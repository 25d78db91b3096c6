"use strict";
(function () {
  // Sorting: numbers as numbers (a cell that starts with one), "–" (not measured) always last.
  var NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?/i;
  function key(cell) {
    var text = cell.textContent.trim();
    if (text === "" || text === "\u2013") return null;
    var m = NUMBER.exec(text);
    return m ? parseFloat(m[0]) : text;
  }
  function sortBy(table, th, col) {
    var body = table.tBodies[0];
    if (!body) return;
    var descending = th.getAttribute("aria-sort") === "ascending";
    var rows = Array.prototype.map.call(body.rows, function (row, i) {
      return { row: row, i: i, key: row.cells[col] ? key(row.cells[col]) : null };
    });
    var numeric = rows.every(function (r) { return r.key === null || typeof r.key === "number"; });
    rows.sort(function (a, b) {
      if (a.key === null || b.key === null) {
        return a.key === b.key ? a.i - b.i : (a.key === null ? 1 : -1);
      }
      var d = numeric ? a.key - b.key
        : String(a.key).localeCompare(String(b.key), undefined, { numeric: true });
      return (descending ? -d : d) || a.i - b.i;
    });
    rows.forEach(function (r) { body.appendChild(r.row); });
    Array.prototype.forEach.call(th.parentNode.cells, function (h) {
      h.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var head = table.tHead && table.tHead.rows[0];
    if (!head) return;
    Array.prototype.forEach.call(head.cells, function (th, col) {
      th.title = "sort by this column";
      th.addEventListener("click", function () { sortBy(table, th, col); });
    });
  });

  // Charts: drawn when they come into view.
  var charts = document.querySelectorAll("div.chart[data-figure]");
  if (!charts.length) return;
  if (typeof Plotly === "undefined") {
    charts.forEach(function (div) { div.textContent = "This chart needs assets/plotly.min.js."; });
    return;
  }
  function draw(div) {
    var figure = JSON.parse(document.getElementById(div.dataset.figure).textContent);
    Plotly.newPlot(div, figure.data, figure.layout,
      { displayModeBar: false, responsive: true });
  }
  if (!("IntersectionObserver" in window)) { charts.forEach(draw); return; }
  var seen = new IntersectionObserver(function (entries) {
    entries.forEach(function (e) {
      if (e.isIntersecting) { seen.unobserve(e.target); draw(e.target); }
    });
  }, { rootMargin: "600px 0px" });
  charts.forEach(function (div) { seen.observe(div); });
})();
