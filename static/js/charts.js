// Draws every plotly chart of the page: <div data-chart="ID"> with its figure in <script id="ID">.
// A trace may carry customdata URLs: clicking a point then opens that page (e.g. a build).
(function () {
  function draw() {
    document.querySelectorAll("[data-chart]").forEach(function (div) {
      var source = document.getElementById(div.dataset.chart);
      if (!source || div.dataset.drawn) return;
      var figure = JSON.parse(source.textContent);
      div.dataset.drawn = "1";
      Plotly.newPlot(div, figure.data, figure.layout, {responsive: true, displaylogo: false});
      div.on("plotly_click", function (event) {
        var point = event.points && event.points[0];
        var url = point && point.customdata;
        if (Array.isArray(url)) url = url[0];
        if (typeof url === "string" && url.charAt(0) === "/") window.location.href = url;
      });
    });
  }
  window.memdashDrawCharts = draw;
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", draw);
  else draw();
})();
