// Injected into a copy of a report page by test_html_layout.py; writes its findings as JSON
// into a pre element with id layout-result so that `chromium --dump-dom` carries them out.
(function () {
  var out = {svgs: 0, texts: 0, points: 0, overlaps: [], outside: [], overflow: 0, hover: null};
  var doc = document.documentElement;
  out.overflow = doc.scrollWidth - doc.clientWidth;
  out.width = doc.clientWidth;
  out.wide = [];
  var all = document.body.querySelectorAll('*');
  for (var w = 0; w < all.length && out.wide.length < 5; w++) {
    var rr = all[w].getBoundingClientRect();
    if (rr.right > doc.clientWidth + 1 && all[w].id !== 'tip') {
      out.wide.push(all[w].tagName + '.' + (all[w].getAttribute('class') || '') + ' ' + Math.round(rr.right));
    }
  }
  function box(el) { var r = el.getBoundingClientRect(); return {l: r.left, t: r.top, r: r.right, b: r.bottom}; }
  function hit(a, b) {
    var w = Math.min(a.r, b.r) - Math.max(a.l, b.l), h = Math.min(a.b, b.b) - Math.max(a.t, b.t);
    return w > 0.5 && h > 0.5;
  }
  var svgs = document.querySelectorAll('svg');
  for (var s = 0; s < svgs.length; s++) {
    out.svgs++;
    var frame = box(svgs[s]);
    var texts = svgs[s].querySelectorAll('text');
    var boxes = [];
    for (var i = 0; i < texts.length; i++) {
      var b = box(texts[i]);
      out.texts++;
      boxes.push(b);
      if (b.l < frame.l - 1 || b.r > frame.r + 1 || b.t < frame.t - 1 || b.b > frame.b + 1) {
        out.outside.push(texts[i].textContent);
      }
    }
    for (var i = 0; i < boxes.length; i++) {
      for (var j = i + 1; j < boxes.length; j++) {
        if (hit(boxes[i], boxes[j])) { out.overlaps.push([texts[i].textContent, texts[j].textContent]); }
      }
    }
    // point labels must not cover another point
    var points = svgs[s].querySelectorAll('.point');
    out.points += points.length;
    var labels = svgs[s].querySelectorAll('.point-label');
    for (var p = 0; p < points.length; p++) {
      for (var q = 0; q < labels.length; q++) {
        if (hit(box(points[p]), box(labels[q]))) { out.overlaps.push(['point ' + p, labels[q].textContent]); }
      }
    }
  }
  var first = document.querySelector('.point');
  var tip = document.getElementById('tip');
  if (first && tip) {
    first.dispatchEvent(new MouseEvent('mouseenter'));
    var tb = box(tip);
    out.hover = {shown: getComputedStyle(tip).display !== 'none', text: tip.textContent,
                 expected: first.getAttribute('data-tip'), right: tb.r, width: doc.clientWidth};
    first.dispatchEvent(new MouseEvent('mouseleave'));
    out.hover.hidden_after = getComputedStyle(tip).display === 'none';
  }
  var pre = document.createElement('pre');
  pre.id = 'layout-result';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
