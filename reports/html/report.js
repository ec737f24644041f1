/* revenant HTML report (reports/html/report.js; embedded by embed.sh).
** Reads the JSON in #rv-data and draws: a picker, a run's header,
** violations, timeline (one lane per actor, spans, faults, folds, chain
** and wait-for edges) and record details; or a swarm's summary. No
** network, no libraries. Any error is written into the page (#rv-errors)
** so that a headless browser's DOM shows it. */
(function () {
  'use strict';
  var nErrors = 0;
  function showError(msg) {
    var box = document.getElementById('rv-errors');
    if (!box) {
      box = document.createElement('pre');
      box.id = 'rv-errors';
      box.className = 'js-error';
      document.body.insertBefore(box, document.body.firstChild);
    }
    box.textContent += msg + '\n';
    document.body.setAttribute('data-js-errors', String(++nErrors));
  }
  window.addEventListener('error', function (e) {
    showError('error: ' + e.message + ' (line ' + e.lineno + ')');
  });
  window.addEventListener('unhandledrejection', function (e) {
    showError('unhandled rejection: ' + e.reason);
  });

  var SVGNS = 'http://www.w3.org/2000/svg';
  var D, run, app, view = null, sel = null, selV = -1, recMap = null;

  function esc(s) {
    return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
      .replace(/"/g, '&quot;');
  }
  function el(tag, attrs, html) {
    var e = document.createElement(tag);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, attrs[k]);
    if (html !== undefined) e.innerHTML = html;
    return e;
  }
  function num(v) { return typeof v === 'string' ? Number(v) : v; }

  /* ---- time formats ---- */
  function pad(n, w) { var s = String(n); while (s.length < w) s = '0' + s; return s; }
  function fmtT(us) {
    us = num(us);
    var neg = us < 0; if (neg) us = -us;
    var s = Math.floor(us / 1e6), ms = Math.floor(us / 1000) % 1000, out;
    if (s >= 86400) out = Math.floor(s / 86400) + 'd' + pad(Math.floor(s % 86400 / 3600), 2) + 'h' +
      pad(Math.floor(s % 3600 / 60), 2) + 'm' + pad(s % 60, 2) + '.' + pad(ms, 3) + 's';
    else if (s >= 3600) out = Math.floor(s / 3600) + 'h' + pad(Math.floor(s % 3600 / 60), 2) + 'm' +
      pad(s % 60, 2) + '.' + pad(ms, 3) + 's';
    else out = s + '.' + pad(ms, 3) + 's';
    return (neg ? '-' : '') + out;
  }
  function trim0(s) { return s.indexOf('.') >= 0 ? s.replace(/\.?0+$/, '') : s; }
  function fmtDur(us) {
    us = Math.round(num(us));
    if (us < 1000) return us + 'us';
    if (us < 1e6) return trim0((us / 1000).toFixed(3)) + 'ms';
    var s = us / 1e6;
    if (s < 60) return trim0(s.toFixed(3)) + 's';
    if (s < 3600) return Math.floor(s / 60) + 'm' + Math.floor(s % 60) + 's';
    if (s < 86400) return Math.floor(s / 3600) + 'h' + Math.floor(s % 3600 / 60) + 'm';
    return Math.floor(s / 86400) + 'd' + Math.floor(s % 86400 / 3600) + 'h';
  }
  var STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5,
    1e6, 2e6, 5e6, 1e7, 15e6, 3e7, 6e7, 12e7, 3e8, 6e8, 9e8, 18e8, 36e8, 72e8, 108e8, 216e8,
    432e8, 864e8, 1728e8, 4320e8, 6048e8, 12096e8, 25920e8];

  /* ---- records ---- */
  function kindName(k) { return (run.kinds && run.kinds[k]) || ('kind_' + k); }
  function actorName(a) { return a < 0 ? 'world' : (run.actors[a] || ('#' + a)); }
  function recFields(r) {
    var out = [];
    for (var i = 4; i + 1 < r.length; i += 2) out.push([run.keys[r[i]], r[i + 1]]);
    return out;
  }
  function fieldText(k, v) {
    if (v === null) return k + '=-';
    if (/_us$/.test(k) && typeof v !== 'boolean') {
      return k.replace(/_us$/, '') + '=' + (/at_us$/.test(k) ? fmtT(v) : fmtDur(v));
    }
    if (typeof v === 'string') return k + '="' + v + '"';
    if (typeof v === 'boolean') return k + '=' + (v ? 'yes' : 'no');
    return k + '=' + v;
  }
  function recLine(r) {
    var s = 't=' + fmtT(r[1]) + ' ' + actorName(r[3]) + ' ' + kindName(r[2]);
    recFields(r).forEach(function (f) { s += ' ' + fieldText(f[0], f[1]); });
    return s;
  }
  function fieldValue(k, v) {
    if (v === null) return '-';
    if (/_us$/.test(k) && typeof v !== 'boolean') return /at_us$/.test(k) ? 't=' + fmtT(v) : fmtDur(v);
    return String(v);
  }

  /* ---- lanes and layout ---- */
  var LABEL_W = 110, ROW_H = 13, EV_H = 12, LANE_PAD = 6, AXIS_H = 22, MAX_ROWS = 8;
  function buildLanes() {
    var lanes = [], byActor = {};
    (run.active || []).forEach(function (a) {
      var l = { actor: a, spans: [], rows: 1, evs: [], y: 0, h: 0 };
      byActor[a] = l; lanes.push(l);
    });
    (run.spans || []).forEach(function (s, i) {
      var l = byActor[s[0]]; if (!l) return;
      l.spans.push(i);
    });
    var endUs = num(run.end_us);
    lanes.forEach(function (l) {
      var rowEnd = [];
      l.spans.sort(function (x, y) { return num(run.spans[x][2]) - num(run.spans[y][2]) || x - y; });
      l.rowOf = {};
      l.spans.forEach(function (i) {
        var s = run.spans[i], t0 = num(s[2]), t1 = num(s[3]) < 0 ? endUs : num(s[3]);
        var r = 0;
        while (r < rowEnd.length && rowEnd[r] > t0) r++;
        if (r >= MAX_ROWS) r = MAX_ROWS - 1;
        rowEnd[r] = Math.max(rowEnd[r] || 0, t1);
        l.rowOf[i] = r;
      });
      l.rows = Math.max(1, rowEnd.length);
    });
    (run.recs || []).forEach(function (r) {
      var l = byActor[r[3]]; if (l) l.evs.push(r);
    });
    var y = AXIS_H;
    lanes.forEach(function (l) { l.y = y; l.h = l.rows * ROW_H + EV_H + 2 * LANE_PAD; y += l.h; });
    return { lanes: lanes, byActor: byActor, height: y + 4 };
  }

  function evClass(r) {
    var k = kindName(r[2]);
    if (k === 'actor_death') {
      var cause = null;
      recFields(r).forEach(function (f) { if (f[0] === 'cause') cause = f[1]; });
      return cause === 'gate_reset' ? 'ev death reset' : 'ev death';
    }
    if (k === 'gate_timeout') return 'ev reset';
    if (k === 'fiber_recovered') return 'ev recovered';
    if (k === 'fiber_hook_threw') return 'ev threw';
    return 'ev';
  }

  /* ---- the timeline ---- */
  var TL = null;
  function xOf(t) { return LABEL_W + (num(t) - view.t0) / (view.t1 - view.t0) * (TL.w - LABEL_W); }
  function tOf(x) { return view.t0 + (x - LABEL_W) / (TL.w - LABEL_W) * (view.t1 - view.t0); }

  function drawAxis(out) {
    var span = view.t1 - view.t0, want = span / Math.max(2, (TL.w - LABEL_W) / 110), step = STEPS[STEPS.length - 1];
    for (var i = 0; i < STEPS.length; i++) if (STEPS[i] >= want) { step = STEPS[i]; break; }
    out.push('<g class="axis">');
    for (var t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
      var x = xOf(t).toFixed(1);
      out.push('<line x1="' + x + '" x2="' + x + '" y1="' + (AXIS_H - 4) + '" y2="' + TL.h + '"></line>');
      out.push('<text x="' + (Number(x) + 2) + '" y="12">' + esc(t === 0 ? '0' : (t < 0 ? '-' : '') + fmtDur(Math.abs(t))) + '</text>');
    }
    out.push('</g>');
  }

  function drawLane(out, l, idx) {
    var W = TL.w, y = l.y;
    out.push('<g class="lane" data-actor="' + esc(actorName(l.actor)) + '">');
    out.push('<rect class="lane-bg' + (idx % 2 ? ' odd' : '') + '" x="0" y="' + y + '" width="' + W +
      '" height="' + l.h + '"></rect>');
    out.push('<line class="lane-sep" x1="0" x2="' + W + '" y1="' + (y + l.h) + '" y2="' + (y + l.h) + '"></line>');
    var endUs = num(run.end_us), rowsPend = {};
    function flush(r) {
      var p = rowsPend[r]; if (!p) return;
      out.push('<rect class="span sp-' + run.span_kinds[p.cls] + (p.n > 1 ? ' dense' : '') +
        (p.open ? ' open-end' : '') + '" data-s="' + p.i + '" x="' + p.x0.toFixed(1) + '" y="' +
        (y + LANE_PAD + r * ROW_H) + '" width="' + Math.max(1, p.x1 - p.x0).toFixed(1) + '" height="' +
        (ROW_H - 2) + '"></rect>');
      rowsPend[r] = null;
    }
    l.spans.forEach(function (i) {
      var s = run.spans[i], t0 = num(s[2]), open = num(s[3]) < 0, t1 = open ? endUs : num(s[3]);
      if (t1 < view.t0 || t0 > view.t1) return;
      var r = l.rowOf[i], x0 = Math.max(LABEL_W, xOf(t0)), x1 = Math.min(W, xOf(t1));
      var p = rowsPend[r];
      if (p && p.cls === s[1] && x0 - p.x1 < 1 && (x1 - x0 < 2 || p.x1 - p.x0 < 2)) {
        p.x1 = Math.max(p.x1, x1); p.n++; return;
      }
      flush(r);
      rowsPend[r] = { i: i, cls: s[1], x0: x0, x1: x1, n: 1, open: open };
    });
    for (var r in rowsPend) flush(r);
    var ey = y + LANE_PAD + l.rows * ROW_H + 1, seen = {};
    l.evs.forEach(function (rec) {
      var t = num(rec[1]);
      if (t < view.t0 || t > view.t1) return;
      var cls = evClass(rec), x = Math.round(xOf(t)), key = x + cls;
      if (seen[key]) return;
      seen[key] = 1;
      var tall = cls !== 'ev';
      out.push('<rect class="' + cls + '" data-i="' + rec[0] + '" x="' + (x - (tall ? 1 : 0.5)) + '" y="' +
        (tall ? ey - 2 : ey + 2) + '" width="' + (tall ? 2.5 : 1.2) + '" height="' + (tall ? EV_H : EV_H - 4) +
        '"></rect>');
    });
    out.push('<text class="lane-label" x="6" y="' + (y + 15) + '">' + esc(actorName(l.actor)) + '</text>');
    out.push('</g>');
  }

  function drawFolds(out) {
    (run.folds || []).forEach(function (f, k) {
      var t0 = num(f.t0), t1 = num(f.t1);
      if (t1 < view.t0 || t0 > view.t1) return;
      var x0 = Math.max(LABEL_W, xOf(t0)), x1 = Math.min(TL.w, xOf(t1)), w = Math.max(2, x1 - x0);
      var what = f.period ? f.repeats + ' repeats' : 'plain stretch';
      out.push('<rect class="fold" data-f="' + k + '" x="' + x0.toFixed(1) + '" y="' + AXIS_H + '" width="' +
        w.toFixed(1) + '" height="' + (TL.h - AXIS_H) + '"><title>folded: ' + esc(what) + ', ' + f.records +
        ' records (click for details)</title></rect>');
      if (w > 90) out.push('<text class="fold-label" x="' + (x0 + 4).toFixed(1) + '" y="' + (TL.h - 6) +
        '">folded: ' + esc(what) + ', ' + f.records + ' records</text>');
    });
  }

  function drawFaults(out) {
    var seen = {};
    (run.faults || []).forEach(function (f) {
      var t = num(f[1]);
      if (t < view.t0 || t > view.t1) return;
      var x = xOf(t), key = Math.round(x);
      if (seen[key]) return;
      seen[key] = 1;
      var label = 'fault: ' + f[3] + (f[4] ? ' ' + f[4] : '') + (f[2] >= 0 ? ' (' + actorName(f[2]) + ')' : '') +
        ' at t=' + fmtT(t);
      out.push('<line class="fault-marker" data-i="' + f[0] + '" x1="' + x.toFixed(1) + '" x2="' + x.toFixed(1) +
        '" y1="' + AXIS_H + '" y2="' + TL.h + '"></line>');
      out.push('<path class="fault-head" data-i="' + f[0] + '" d="M' + (x - 5).toFixed(1) + ',' + (AXIS_H - 8) +
        ' h10 l-5,8 z"><title>' + esc(label) + '</title></path>');
    });
  }

  function laneMid(a) {
    var l = TL.layout.byActor[a];
    return l ? l.y + LANE_PAD + ROW_H / 2 : AXIS_H + 6;
  }

  function drawSelection(out) {
    if (selV >= 0) {
      var v = run.sels[selV], vx = xOf(v.t);
      if (vx >= LABEL_W && vx <= TL.w && !v.fact)
        out.push('<line class="viol-marker" x1="' + vx.toFixed(1) + '" x2="' + vx.toFixed(1) + '" y1="' + AXIS_H +
          '" y2="' + TL.h + '"><title>' + esc(v.inv + ': ' + v.msg) + '</title></line>');
      (v.waits || []).forEach(function (w) {
        var y = laneMid(w[1]) + ROW_H - 2, x0 = Math.max(LABEL_W, xOf(w[3])), x1 = Math.min(TL.w, vx);
        if (w[0] === 'alarm') {
          var ax = xOf(w[4]);
          out.push('<path class="wait-edge wait-alarm" d="M' + x1.toFixed(1) + ',' + y + ' L' +
            Math.max(LABEL_W, Math.min(TL.w, ax)).toFixed(1) + ',' + y + '"><title>alarm armed for t=' +
            esc(fmtT(w[4])) + '</title></path>');
          return;
        }
        if (x1 > x0) out.push('<rect class="wait-bar" x="' + x0.toFixed(1) + '" y="' + (y - 3) + '" width="' +
          (x1 - x0).toFixed(1) + '" height="6"><title>' + esc(w[0] + ' since t=' + fmtT(w[3])) + '</title></rect>');
        if (w[0] === 'rpc' && w[2] >= 0) {
          var y2 = laneMid(w[2]);
          out.push('<path class="wait-edge wait-rpc" marker-end="url(#rv-arrow)" d="M' + x1.toFixed(1) + ',' + y +
            ' C' + (x1 + 40).toFixed(1) + ',' + y + ' ' + (x1 + 40).toFixed(1) + ',' + y2 + ' ' + (x1 + 4).toFixed(1) +
            ',' + y2 + '"><title>' + esc(actorName(w[1]) + ' waits on ' + actorName(w[2]) + ': call ' + w[4] + ' ' +
            w[5]) + '</title></path>');
        }
      });
      var pts = [];
      v.chain.forEach(function (idx, n) {
        var r = recMap.get(idx); if (!r) return;
        var x = xOf(r[1]), y = laneMid(r[3]);
        if (x < LABEL_W - 2 || x > TL.w + 2) return;
        pts.push(x.toFixed(1) + ',' + y);
        out.push('<circle class="chain-mark" data-i="' + idx + '" cx="' + x.toFixed(1) + '" cy="' + y + '" r="5">' +
          '<title>' + esc((n + 1) + '. ' + recLine(r)) + '</title></circle>');
        out.push('<text class="chain-num" x="' + (x + 6).toFixed(1) + '" y="' + (y - 5) + '">' + (n + 1) + '</text>');
      });
      if (pts.length > 1) out.splice(out.length - 2 * pts.length, 0, '<polyline class="chain-link" points="' +
        pts.join(' ') + '"></polyline>');
    }
  }

  function redraw() {
    var svg = TL.svg, out = [];
    TL.w = Math.max(400, TL.wrap.clientWidth - 2);
    out.push('<defs><pattern id="rv-hatch" width="6" height="6" patternUnits="userSpaceOnUse" ' +
      'patternTransform="rotate(45)"><rect width="6" height="6" fill="#eef0f2" fill-opacity=".85"></rect>' +
      '<line x1="0" y1="0" x2="0" y2="6" stroke="#b8c0c8" stroke-width="2"></line></pattern>' +
      '<marker id="rv-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" ' +
      'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#1565c0"></path></marker></defs>');
    TL.layout.lanes.forEach(function (l, i) { drawLane(out, l, i); });
    drawAxis(out);
    drawFolds(out);
    drawFaults(out);
    drawSelection(out);
    drawPicked(out);
    svg.setAttribute('width', TL.w);
    svg.setAttribute('height', TL.h);
    svg.setAttribute('viewBox', '0 0 ' + TL.w + ' ' + TL.h);
    svg.innerHTML = out.join('');
    TL.range.textContent = fmtT(view.t0) + ' .. ' + fmtT(view.t1) + ' (' + fmtDur(Math.round(view.t1 - view.t0)) + ')';
  }

  function setView(t0, t1) {
    var end = Math.max(1, num(run.end_us)), min = 20;
    if (t1 - t0 < min) { var m = (t0 + t1) / 2; t0 = m - min / 2; t1 = m + min / 2; }
    var span = Math.min(t1 - t0, end * 1.1 + 1000);
    if (t0 < -end * 0.05) t0 = -end * 0.05;
    t1 = t0 + span;
    if (t1 > end * 1.05 + 1000) { t1 = end * 1.05 + 1000; t0 = t1 - span; }
    view = { t0: t0, t1: t1 };
    redraw();
  }
  function fit() { var end = Math.max(1, num(run.end_us)); setView(-end * 0.01, end * 1.01); }
  function zoom(f, x) {
    var t = tOf(x === undefined ? (LABEL_W + TL.w) / 2 : x);
    setView(t - (t - view.t0) * f, t + (view.t1 - t) * f);
  }

  /* ---- details ---- */
  function detailTable(rows) {
    return '<table class="fields">' + rows.map(function (r) {
      return '<tr><td>' + esc(r[0]) + '</td><td class="mono">' + esc(r[1]) + '</td></tr>';
    }).join('') + '</table>';
  }
  function recRows(r) {
    var rows = [['record', '#' + r[0]], ['t', fmtT(r[1])], ['kind', kindName(r[2])], ['actor', actorName(r[3])]];
    recFields(r).forEach(function (f) { rows.push([f[0], fieldValue(f[0], f[1])]); });
    return rows;
  }
  function showRecord(idx) {
    var r = recMap.get(idx), box = document.getElementById('rv-detail');
    box.innerHTML = r ? detailTable(recRows(r)) : '<p>record #' + esc(idx) + ' is inside a folded stretch</p>';
  }
  function showSpan(i) {
    var s = run.spans[i], box = document.getElementById('rv-detail');
    var open = num(s[3]) < 0, rows = [['span', run.span_kinds[s[1]]], ['actor', actorName(s[0])],
      ['from', 't=' + fmtT(s[2])], ['to', open ? 'open at the end of the run' : 't=' + fmtT(s[3])]];
    if (!open) rows.push(['duration', fmtDur(num(s[3]) - num(s[2]))]);
    var html = detailTable(rows), o = recMap.get(s[4]), c = s[5] >= 0 ? recMap.get(s[5]) : null;
    html += '<h3>opened by</h3>' + (o ? detailTable(recRows(o)) : '<p>(folded)</p>');
    if (s[5] >= 0) html += '<h3>closed by</h3>' + (c ? detailTable(recRows(c)) : '<p>(folded)</p>');
    box.innerHTML = html;
  }
  function showFold(k) {
    var f = run.folds[k], rows = [['folded', f.period ? f.repeats + ' repeats of a ' + f.period +
      '-segment pattern' : 'plain stretch (size budget)'], ['records', f.records + ' (#' + f.first + '..#' + f.last + ')'],
      ['from', 't=' + fmtT(f.t0)], ['to', 't=' + fmtT(f.t1)]];
    Object.keys(f.kinds).sort(function (a, b) { return f.kinds[b] - f.kinds[a]; }).forEach(function (k2) {
      rows.push([kindName(k2), f.kinds[k2] + ' records']);
    });
    document.getElementById('rv-detail').innerHTML = detailTable(rows);
  }

  /* ---- violations ---- */
  /* What can be selected: the violations, then the facts (a fact's chain
  ** is its nearest or first matching records). */
  function selections() {
    var out = run.viols.slice();
    (run.facts || []).forEach(function (f) {
      var t = num(run.end_us);
      if (f.near.length) { var r = recMap.get(f.near[f.near.length - 1]); if (r) t = num(r[1]); }
      out.push({ inv: 'fact "' + f.name + '"', actor: -1, t: t, chain: f.near, waits: [], fact: f,
        msg: (f.passed ? 'holds: ' : 'failed: ') + f.msg });
    });
    return out;
  }
  function selectViolation(k, zoomTo) {
    selV = k;
    var items = document.querySelectorAll('li.viol');
    for (var i = 0; i < items.length; i++) items[i].classList.toggle('selected', Number(items[i].getAttribute('data-v')) === k);
    var v = run.sels[k], box = document.getElementById('rv-sel'), h = [];
    if (v.fact) {
      h.push('<h3>selected fact</h3><p><b>' + esc(v.inv) + '</b> (' + esc(run.file || '') + ':' + esc(v.fact.line) + ')<br>' +
        esc(v.msg) + '</p><p class="mono">' + esc(v.fact.json) + '</p>');
      h.push('<h3>' + (v.fact.matches ? 'matching' : 'nearest') + ' records (' + v.chain.length + ')</h3><ol class="chain">');
    } else {
      h.push('<h3>selected violation</h3><p><b>' + esc(v.inv) + '</b> ' + esc(actorName(v.actor)) + ' t=' +
        esc(fmtT(v.t)) + '<br>' + esc(v.msg) + '</p>');
      h.push('<h3>causal chain (' + v.chain.length + ')</h3><ol class="chain">');
    }
    v.chain.forEach(function (idx) {
      var r = recMap.get(idx);
      h.push('<li class="chain-rec" data-i="' + idx + '">' + esc(r ? recLine(r) : 'record #' + idx + ' (folded)') + '</li>');
    });
    h.push('</ol>');
    if (v.waits && v.waits.length) {
      h.push('<h3>who waits on whom at t=' + esc(fmtT(v.t)) + '</h3><ul class="waits">');
      v.waits.forEach(function (w) {
        var txt = w[0] + ': ' + actorName(w[1]);
        if (w[0] === 'gate') txt += ' holds its input gate since t=' + fmtT(w[3]) + (w[5] ? ' ("' + w[5] + '")' : '');
        else if (w[0] === 'rpc') txt += ' -> ' + (w[2] >= 0 ? actorName(w[2]) : '?') + ' call ' + w[4] + ' "' + w[5] +
          '" unanswered since t=' + fmtT(w[3]);
        else if (w[0] === 'request') txt += ' request ' + w[4] + ' (' + w[5] + ') unanswered since t=' + fmtT(w[3]);
        else txt += ' alarm armed for t=' + fmtT(w[4]);
        h.push('<li class="wait-rec" data-i="' + esc(w[6]) + '">' + esc(txt) + '</li>');
      });
      h.push('</ul>');
    }
    box.innerHTML = h.join('');
    if (zoomTo && v.fact && !v.chain.length) fit();
    else if (zoomTo) {
      var t0 = num(v.t), t1 = num(v.t);
      v.chain.forEach(function (idx) {
        var r = recMap.get(idx);
        if (r) { t0 = Math.min(t0, num(r[1])); t1 = Math.max(t1, num(r[1])); }
      });
      (v.waits || []).forEach(function (w) { if (w[0] !== 'alarm') t0 = Math.min(t0, num(w[3])); });
      var pad = Math.max(2e6, (t1 - t0) * 0.08);
      setView(t0 - pad, t1 + pad);
    } else redraw();
  }

  /* ---- interaction ---- */
  var picked = null; /* {s: span} or {i: record index}: outlined on the timeline */
  function drawPicked(out) {
    if (!picked) return;
    var x0, x1, y;
    if (picked.s !== undefined) {
      var s = run.spans[picked.s], l = TL.layout.byActor[s[0]];
      if (!l) return;
      x0 = xOf(s[2]); x1 = num(s[3]) < 0 ? xOf(run.end_us) : xOf(s[3]);
      y = l.y + LANE_PAD + l.rowOf[picked.s] * ROW_H - 1;
      out.push('<rect class="sel-outline" x="' + (Math.max(LABEL_W, x0) - 1).toFixed(1) + '" y="' + y + '" width="' +
        (Math.max(2, Math.min(TL.w, x1) - Math.max(LABEL_W, x0)) + 2).toFixed(1) + '" height="' + ROW_H + '"></rect>');
    } else {
      var r = recMap.get(picked.i), lr = r && TL.layout.byActor[r[3]];
      if (!lr) return;
      x0 = xOf(r[1]);
      out.push('<rect class="sel-outline" x="' + (x0 - 3).toFixed(1) + '" y="' + (lr.y + 2) + '" width="6" height="' +
        (lr.h - 4) + '"></rect>');
    }
  }
  function onClickTarget(t) {
    while (t && t !== TL.svg && !(t.getAttribute && (t.getAttribute('data-i') !== null ||
      t.getAttribute('data-s') !== null || t.getAttribute('data-f') !== null))) t = t.parentNode;
    if (!t || t === TL.svg) return;
    if (t.getAttribute('data-s') !== null) {
      picked = { s: Number(t.getAttribute('data-s')) };
      showSpan(picked.s);
    } else if (t.getAttribute('data-f') !== null) {
      picked = null;
      showFold(Number(t.getAttribute('data-f')));
    } else {
      picked = { i: Number(t.getAttribute('data-i')) };
      showRecord(picked.i);
    }
    redraw();
  }
  var drag = null;
  /* The timeline's own listeners (a new svg per run page). */
  function attach() {
    var svg = TL.svg;
    svg.addEventListener('wheel', function (e) {
      e.preventDefault();
      var rect = svg.getBoundingClientRect();
      zoom(e.deltaY > 0 ? 1.25 : 0.8, e.clientX - rect.left);
    }, { passive: false });
    svg.addEventListener('mousedown', function (e) {
      drag = { x: e.clientX, t0: view.t0, t1: view.t1, moved: false, target: e.target };
      svg.classList.add('dragging');
    });
  }
  /* The window's listeners, once: drag, release, resize, keys. */
  function attachWindow() {
    window.addEventListener('mousemove', function (e) {
      if (!drag || !TL) return;
      var dx = e.clientX - drag.x;
      if (Math.abs(dx) > 3) drag.moved = true;
      if (!drag.moved) return;
      var dt = dx / (TL.w - LABEL_W) * (drag.t1 - drag.t0);
      setView(drag.t0 - dt, drag.t1 - dt);
    });
    window.addEventListener('mouseup', function () {
      if (!drag) return;
      if (TL) TL.svg.classList.remove('dragging');
      if (!drag.moved && TL) onClickTarget(drag.target);
      drag = null;
    });
    window.addEventListener('resize', function () { if (TL) redraw(); });
    window.addEventListener('keydown', function (e) {
      if (!TL || e.target.tagName === 'SELECT' || e.target.tagName === 'INPUT') return;
      var s = view.t1 - view.t0;
      if (e.key === '+' || e.key === '=') zoom(0.5);
      else if (e.key === '-') zoom(2);
      else if (e.key === 'ArrowLeft') setView(view.t0 - s / 4, view.t1 - s / 4);
      else if (e.key === 'ArrowRight') setView(view.t0 + s / 4, view.t1 + s / 4);
      else if (e.key === '0') fit();
      else return;
      e.preventDefault();
    });
  }

  /* ---- a run's page ---- */
  function runTitle(r) {
    return (r.passed ? 'PASS ' : 'FAIL ') + (r.scenario || '(unnamed)') +
      (r['case'] && r['case'] !== 'default' ? ' [' + r['case'] + ']' : '') + ' seed=' + r.seed + ' ' + (r.strategy || '');
  }
  /* The run page's header: verdict, identity, expectation, replay, figures. */
  function runHeadHtml() {
    var h = [];
    h.push('<div class="run-head"><div class="title"><span class="badge ' + (run.passed ? 'pass">PASS' : 'fail">FAIL') +
      '</span>' + esc(run.scenario || '(unnamed)') + (run['case'] ? ' <span class="mono">[' + esc(run['case']) + ']</span>' : '') + '</div>');
    h.push('<div class="meta"><span>seed <b class="mono">' + esc(run.seed) + '</b></span><span>strategy <b>' +
      esc(run.strategy || '-') + '</b></span><span>hash <b class="mono">' + esc(run.hash) + '</b></span><span>' +
      '<b>' + esc(run.events) + '</b> events</span><span>virtual time <b>' + esc(fmtDur(run.end_us)) + '</b></span>' +
      '<span>file <b class="mono">' + esc(run.file || '-') + '</b></span><span>shown <b>' + esc(run.kept || 0) + '</b> of ' +
      esc(run.total || 0) + ' records, ' + (run.folds ? run.folds.length : 0) + ' folds</span></div>');
    if (run.expect) h.push('<div class="meta">expected: ' + esc(run.expect) + '</div>');
    if (run.failure) h.push('<div class="failure">' + esc(run.failure) + '</div>');
    if (run.replay) h.push('<div class="replay">replay: <code>' + esc(run.replay) + '</code></div>');
    if (run.figures && run.figures.length) h.push('<div class="meta">' + run.figures.map(function (f) {
      return '<span>' + esc(f[0]) + '=<b>' + esc(f[1]) + esc(f[2] || '') + '</b></span>';
    }).join('') + '</div>');
    h.push('</div>');
    return h.join('');
  }
  /* The side panel: violations, the selection, faults, details. */
  function runSideHtml() {
    var h = [];
    h.push('<div class="layout"><aside class="side"><h3>violations (' + run.viols.length + ')</h3>');
    if (!run.viols.length) h.push('<p>none</p>');
    else {
      h.push('<ol class="viols">');
      run.viols.forEach(function (x, k) {
        h.push('<li class="viol" data-v="' + k + '" title="' + esc(x.msg) + '"><span class="inv">' + esc(x.inv) +
          '</span> ' + esc(actorName(x.actor)) + ' t=' + esc(fmtT(x.t)) + '</li>');
      });
      h.push('</ol>');
    }
    if (run.facts && run.facts.length) {
      var nf = run.facts.filter(function (x) { return !x.passed; }).length;
      h.push('<h3>facts (' + run.facts.length + ', ' + nf + ' failed)</h3><ol class="facts">');
      run.facts.forEach(function (x, k) {
        h.push('<li class="viol fact' + (x.passed ? ' held' : '') + '" data-v="' + (run.viols.length + k) + '" title="' +
          esc(x.msg) + '"><span class="inv">' + (x.passed ? 'holds' : 'FAILED') + '</span> ' + esc(x.name) + '</li>');
      });
      h.push('</ol>');
    }
    h.push('<div id="rv-sel"></div><h3>faults (' + (run.faults || []).length + ')</h3>');
    if (!(run.faults || []).length) h.push('<p>none</p>');
    else {
      h.push('<ul class="faults">');
      run.faults.slice(0, 50).forEach(function (f) {
        h.push('<li class="chain-rec fault-rec" data-i="' + f[0] + '">t=' + esc(fmtT(f[1])) + ' ' + esc(f[3]) +
          (f[2] >= 0 ? ' ' + esc(actorName(f[2])) : '') + (f[4] ? ' ' + esc(f[4]) : '') + '</li>');
      });
      if (run.faults.length > 50) h.push('<li>... and ' + (run.faults.length - 50) + ' more</li>');
      h.push('</ul>');
    }
    h.push('<h3>details</h3><div id="rv-detail"><p>click a span, a mark or a fold</p></div></aside>');
    return h.join('');
  }
  /* The toolbar, the timeline's svg and the legend. */
  function runTimelineHtml() {
    var h = [];
    h.push('<div class="tl-wrap"><div class="toolbar"><button data-act="fit">fit</button><button data-act="in">zoom in</button>' +
      '<button data-act="out">zoom out</button><button data-act="left">&larr;</button><button data-act="right">&rarr;</button>' +
      '<button data-act="viol">to violation</button><span class="range"></span></div>' +
      '<svg class="timeline" xmlns="' + SVGNS + '"></svg><div class="legend">' +
      run.span_kinds.map(function (k) { return '<span><i class="sp-' + k + '" style="background:currentColor"></i>' + k + '</span>'; }).join('') +
      '<span>red tick: death, orange: gate reset, green: fiber recovered; dashed orange line: fault; hatched: folded; ' +
      'pink: causal chain; blue: wait-for. Wheel or +/- zooms, drag or arrows pan, 0 fits.</span></div></div></div>');
    return h.join('');
  }
  function showRun(i) {
    run = D.runs[i];
    selV = -1;
    picked = null;
    recMap = new Map();
    (run.recs || []).forEach(function (r) { recMap.set(r[0], r); });
    run.sels = selections();
    var v = el('section', { 'class': 'run', 'data-run': String(i) }), h = [];
    h.push(runHeadHtml(), runSideHtml(), runTimelineHtml());
    v.innerHTML = h.join('');
    app.replaceChildren(v);
    v.querySelectorAll('.legend i').forEach(function (e) {
      var c = getComputedStyle(e).fill; if (c && c !== 'none') e.style.background = c;
    });
    var wrap = v.querySelector('.tl-wrap'), layout = buildLanes();
    TL = { svg: v.querySelector('svg.timeline'), wrap: wrap, range: v.querySelector('.range'), layout: layout,
      h: layout.height, w: 800 };
    attach();
    v.querySelector('.toolbar').addEventListener('click', function (e) {
      var a = e.target.getAttribute('data-act'), s = view.t1 - view.t0;
      if (a === 'fit') fit();
      else if (a === 'in') zoom(0.5);
      else if (a === 'out') zoom(2);
      else if (a === 'left') setView(view.t0 - s / 3, view.t1 - s / 3);
      else if (a === 'right') setView(view.t0 + s / 3, view.t1 + s / 3);
      else if (a === 'viol' && selV >= 0) selectViolation(selV, true);
    });
    v.querySelector('aside').addEventListener('click', function (e) {
      var t = e.target.closest('[data-v],[data-i]');
      if (!t) return;
      if (t.hasAttribute('data-v')) selectViolation(Number(t.getAttribute('data-v')), true);
      else if (t.hasAttribute('data-i')) {
        var idx = Number(t.getAttribute('data-i')), r = recMap.get(idx);
        showRecord(idx);
        picked = { i: idx };
        if (r) { var s = view.t1 - view.t0; setView(num(r[1]) - s / 2, num(r[1]) + s / 2); }
      }
    });
    view = { t0: 0, t1: 1 };
    fit();
    var want = Number((/[#&]v=(\d+)/.exec(location.hash) || [])[1] || 0);
    var first = run.viols.length ? 0 : -1;
    (run.facts || []).forEach(function (x, k) { if (first < 0 && !x.passed) first = run.viols.length + k; });
    if (/[#&]v=\d/.test(location.hash)) first = Math.min(want, run.sels.length - 1);
    if (first >= 0) selectViolation(first, !/[#&]fit/.test(location.hash));
    /* #rec=N, #span=N, #fold=N: open with that item picked, as if clicked */
    var pk = /[#&](rec|span|fold)=(\d+)/.exec(location.hash);
    if (pk && pk[1] === 'rec' && recMap.has(Number(pk[2]))) { picked = { i: Number(pk[2]) }; showRecord(picked.i); }
    else if (pk && pk[1] === 'span' && run.spans[Number(pk[2])]) { picked = { s: Number(pk[2]) }; showSpan(picked.s); }
    else if (pk && pk[1] === 'fold' && run.folds[Number(pk[2])]) showFold(Number(pk[2]));
    if (pk) redraw();
  }

  /* ---- a swarm's page ---- */
  function pct(sorted, p) {
    if (!sorted.length) return 0;
    var k = Math.ceil(p / 100 * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, k))];
  }
  function recoveryPlot(us) {
    var W = 560, H = 220, L = 44, B = 34, ms = us.map(function (x) { return num(x) / 1000; }).sort(function (a, b) { return a - b; });
    if (!ms.length) return '<p>no recovery episodes were measured</p>';
    var lo = Math.floor(Math.log10(Math.max(ms[0], 0.001))), hi = Math.ceil(Math.log10(Math.max(ms[ms.length - 1], 0.001) * 1.0001));
    if (hi <= lo) hi = lo + 1;
    var perDec = 5, nb = (hi - lo) * perDec, bins = new Array(nb).fill(0);
    ms.forEach(function (x) {
      var b = Math.floor((Math.log10(Math.max(x, 0.001)) - lo) * perDec);
      bins[Math.max(0, Math.min(nb - 1, b))]++;
    });
    var max = Math.max.apply(null, bins), bw = (W - L - 10) / nb, o = [];
    o.push('<svg class="plot recovery-plot" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H + '">');
    o.push('<line class="axisl" x1="' + L + '" y1="' + (H - B) + '" x2="' + (W - 10) + '" y2="' + (H - B) + '"></line>');
    bins.forEach(function (c, i) {
      if (!c) return;
      var h = (H - B - 14) * c / max;
      o.push('<rect class="bar" x="' + (L + i * bw + 1).toFixed(1) + '" y="' + (H - B - h).toFixed(1) + '" width="' +
        (bw - 2).toFixed(1) + '" height="' + h.toFixed(1) + '"><title>' + c + ' episodes</title></rect>');
    });
    for (var d = lo; d <= hi; d++) {
      var x = L + (d - lo) * perDec * bw;
      o.push('<text x="' + x.toFixed(1) + '" y="' + (H - B + 14) + '" text-anchor="' + (d === hi ? 'end' : 'middle') + '">' +
        esc(fmtDur(Math.pow(10, d) * 1000)) + '</text>');
    }
    [[50, 'p50'], [90, 'p90'], [99, 'p99']].forEach(function (p, i) {
      var v = pct(ms, p[0]), x = L + (Math.log10(Math.max(v, 0.001)) - lo) * perDec * bw;
      var right = x > W - 120;
      o.push('<line class="pline" x1="' + x.toFixed(1) + '" x2="' + x.toFixed(1) + '" y1="' + (4 + 11 * i) + '" y2="' + (H - B) + '"></line>');
      o.push('<text x="' + (right ? x - 3 : x + 3).toFixed(1) + '" y="' + (12 + 11 * i) + '"' + (right ? ' text-anchor="end"' : '') +
        '>' + p[1] + ' ' + esc(fmtDur(Math.round(v * 1000))) + '</text>');
    });
    o.push('<text x="4" y="22">' + max + '</text><text x="4" y="' + (H - B) + '">0</text>');
    o.push('<text x="' + L + '" y="' + (H - 4) + '">recovery time (log scale); bar height: episodes (max ' + max + ')</text></svg>');
    o.push('<table class="sigs pct"><tr><th>n</th><th>min</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr><tr><td>' +
      ms.length + '</td>' + [0, 50, 90, 99, 100].map(function (p) {
        return '<td>' + esc(fmtDur(Math.round((p ? pct(ms, p) : ms[0]) * 1000))) + '</td>';
      }).join('') + '</tr></table>');
    return o.join('');
  }
  // The probe table of `swarm` (docs/swarm.md "Probes"): each probe some run
  // reached, with its runs and first seed, then the probes no run reached.
  function probeTable(probes) {
    if (!probes.length) return '';
    var hit = probes.filter(function (p) { return p[1] > 0; }), miss = probes.filter(function (p) { return !(p[1] > 0); });
    var o = ['<h2>probes: ' + hit.length + ' of ' + probes.length + ' reached</h2>'];
    if (hit.length) {
      o.push('<table class="sigs probes"><tr><th>probe</th><th>runs</th><th>first seed</th><th>scenario [case]</th></tr>');
      hit.forEach(function (p) {
        o.push('<tr><td class="mono">' + esc(p[0]) + '</td><td>' + esc(p[1]) + '</td><td class="mono">' + esc(p[2]) +
          '</td><td>' + esc(p[3]) + ' [' + esc(p[4]) + ']</td></tr>');
      });
      o.push('</table>');
    }
    if (miss.length)
      o.push('<p class="unreached">not reached: ' + miss.map(function (p) { return '<code>' + esc(p[0]) + '</code>'; }).join(', ') + '</p>');
    return o.join('');
  }
  function kindsPlot(kinds) {
    if (!kinds.length) return '<p>no faults were injected</p>';
    var W = 560, RH = 18, L = 130, H = kinds.length * RH + 30, max = 1, o = [];
    kinds.forEach(function (k) { max = Math.max(max, k[1]); });
    o.push('<svg class="plot kinds-plot" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H + '">');
    kinds.forEach(function (k, i) {
      var y = 6 + i * RH, w = (W - L - 130) * k[1] / max, wf = (W - L - 130) * k[2] / max;
      o.push('<text x="4" y="' + (y + 12) + '">' + esc(k[0]) + '</text>');
      o.push('<rect class="bar" x="' + L + '" y="' + y + '" width="' + w.toFixed(1) + '" height="' + (RH - 4) + '"></rect>');
      o.push('<rect class="bar failed" x="' + L + '" y="' + y + '" width="' + wf.toFixed(1) + '" height="' + (RH - 4) + '"></rect>');
      o.push('<text x="' + (L + w + 4).toFixed(1) + '" y="' + (y + 12) + '">' + k[1] + ' runs, ' + k[2] + ' failed</text>');
    });
    o.push('<text x="4" y="' + (H - 6) + '">runs with at least one fault of the kind (red: of those, failed)</text></svg>');
    return o.join('');
  }
  function showSwarm() {
    var s = D.swarm, h = [], v = el('section', { 'class': 'swarm' });
    run = null; TL = null;
    h.push('<div class="run-head"><div class="title"><span class="badge ' + (s.failed ? 'fail">FAIL' : 'pass">PASS') +
      '</span>swarm: ' + esc(s.runs) + ' runs, ' + esc(s.failed) + ' failed</div>');
    if (s.title) h.push('<div class="meta mono">' + esc(s.title) + '</div>');
    h.push('</div><h2>signatures (' + s.sigs.length + ')</h2>');
    if (!s.sigs.length) h.push('<p>no failures</p>');
    else {
      h.push('<table class="sigs"><tr><th>#</th><th>signature</th><th>scenario [case]</th><th>runs</th>' +
        '<th>first seed</th><th>replay</th></tr>');
      s.sigs.forEach(function (g, k) {
        var link = '';
        D.runs.forEach(function (r, i) {
          if (!link && r.scenario === g.scenario && r['case'] === g['case'] && r.seed === g.first_seed)
            link = ' <a class="runlink" data-run="' + i + '">timeline</a>';
        });
        h.push('<tr class="sig"><td>' + (k + 1) + '</td><td class="mono">' + esc(g.sig) + '</td><td>' + esc(g.scenario) +
          ' [' + esc(g['case']) + ']</td><td>' + esc(g.count) + '</td><td class="mono">' + esc(g.first_seed) + link +
          '</td><td><code>' + esc(g.replay || '') + '</code></td></tr>');
      });
      h.push('</table>');
    }
    h.push('<div class="plots"><div><h2>recovery times</h2>' + recoveryPlot(s.recovery_us || []) + '</div>');
    h.push('<div><h2>runs per fault kind</h2>' + kindsPlot(s.kinds || []) + '</div></div>');
    h.push(probeTable(s.probes || []));
    v.innerHTML = h.join('');
    app.replaceChildren(v);
    v.addEventListener('click', function (e) {
      var a = e.target.closest('a.runlink');
      if (a) { var p = document.getElementById('rv-picker'); p.value = 'run' + a.getAttribute('data-run'); p.onchange(); }
    });
  }

  function main() {
    D = JSON.parse(document.getElementById('rv-data').textContent);
    attachWindow();
    app = document.getElementById('rv-app');
    var top = el('header', { 'class': 'top' }, '<h1>revenant report</h1>');
    var pick = el('select', { id: 'rv-picker' });
    if (D.swarm) pick.appendChild(el('option', { value: 'swarm' }, 'swarm summary'));
    D.runs.forEach(function (r, i) { pick.appendChild(el('option', { value: 'run' + i }, esc(runTitle(r)))); });
    pick.onchange = function () {
      if (pick.value === 'swarm') showSwarm(); else showRun(Number(pick.value.slice(3)));
    };
    top.appendChild(pick);
    top.appendChild(el('span', {}, esc(D.runs.length + ' run' + (D.runs.length === 1 ? '' : 's'))));
    document.body.insertBefore(top, app);
    if (/[#&]all\b/.test(location.hash)) { /* tests: draw every page once */
      if (D.swarm) showSwarm();
      D.runs.forEach(function (r, i) { showRun(i); });
      document.body.setAttribute('data-pages', String(D.runs.length + (D.swarm ? 1 : 0)));
    }
    var m = /[#&]run=(\d+)/.exec(location.hash);
    if (m && D.runs[Number(m[1])]) pick.value = 'run' + m[1];
    if (pick.options.length) pick.onchange();
    else app.textContent = 'no runs';
  }
  try { main(); } catch (e) { showError('error: ' + (e && e.stack ? e.stack : e)); }
  document.body.setAttribute('data-ready', '1');
})();
