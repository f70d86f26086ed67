// slowlab's scrubbable view: one run per route side by side, at one instant
// chosen with a slider or played at 1x or 0.25x. Everything it draws comes
// from the JSON in #scrub-data (harness/src/report/scrub/data.rs); the one
// thing decided here is which /fast requests are waiting at an instant.
// No libraries, nothing fetched. The container stays hidden until this has
// built it, so without JavaScript the page shows only the static charts.
//
// For tests and screenshots every panel carries its state as data
// attributes (data-t-ms, data-waiting, data-answered, data-failed,
// data-busy, data-sampled), every bar segment data-layer and data-bytes,
// every worker lane data-busy, every /fast mark data-state. A page opened
// at #scrub-t=2.4 starts at that instant.
(function () {
  'use strict';
  var root = document.getElementById('scrub-view');
  var source = document.getElementById('scrub-data');
  if (!root || !source) {
    return;
  }
  var data = JSON.parse(source.textContent);
  var dtMs = data.dt_ms;
  var last = data.frames - 1;
  var endMs = last * dtMs;
  var MIB = 1048576;
  var current = 0;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) {
      e.className = cls;
    }
    if (text !== undefined) {
      e.textContent = text;
    }
    return e;
  }

  function mib(b) {
    return b < MIB ? (b / 1024).toFixed(0) + ' KiB' : (b / MIB).toFixed(1) + ' MiB';
  }

  function duration(ms) {
    return ms < 1000 ? ms.toFixed(ms < 10 ? 1 : 0) + ' ms' : (ms / 1000).toFixed(2) + ' s';
  }

  function seconds(ms) {
    return (ms / 1000).toFixed(2) + ' s';
  }

  function share(x, of) {
    var p = of > 0 ? (100 * x) / of : 0;
    return Math.max(0, Math.min(100, p)) + '%';
  }

  // --- controls ---------------------------------------------------------
  var controls = el('div', 'scrub-controls');
  controls.setAttribute('role', 'group');
  controls.setAttribute('aria-label', 'Time in the runs');
  var play = el('button', 'scrub-play', 'Play');
  play.type = 'button';
  play.setAttribute('aria-pressed', 'false');
  var slider = el('input', 'scrub-slider');
  slider.type = 'range';
  slider.id = 'scrub-time';
  slider.min = '0';
  slider.max = String(last);
  slider.step = '1';
  slider.value = '0';
  slider.setAttribute('aria-label', 'Instant in the runs (seconds since the slow readers started)');
  var now = el('output', 'scrub-now');
  now.setAttribute('for', 'scrub-time');
  var speeds = el('span', 'scrub-speeds');
  speeds.setAttribute('role', 'radiogroup');
  speeds.setAttribute('aria-label', 'Playback speed');
  var speed = 1;
  [1, 0.25].forEach(function (v) {
    var label = el('label');
    var input = el('input');
    input.type = 'radio';
    input.name = 'scrub-speed';
    input.value = String(v);
    input.checked = v === 1;
    input.addEventListener('change', function () {
      if (input.checked) {
        restart(v);
      }
    });
    label.appendChild(input);
    label.appendChild(document.createTextNode(' ' + v + 'x'));
    speeds.appendChild(label);
  });
  controls.appendChild(play);
  controls.appendChild(speeds);
  controls.appendChild(slider);
  controls.appendChild(now);
  root.appendChild(controls);

  // --- legend -----------------------------------------------------------
  var legend = el('ul', 'scrub-legend');
  legend.setAttribute('aria-label', 'Legend');
  function key(cls, color, label) {
    var li = el('li');
    var sw = el('span', 'scrub-swatch ' + cls);
    if (color) {
      sw.style.background = color;
    }
    li.appendChild(sw);
    li.appendChild(document.createTextNode(label));
    legend.appendChild(li);
  }
  data.layers.forEach(function (l) {
    if (l.shown) {
      key('', l.color, l.label);
    }
  });
  key('scrub-rest', '', 'not at this reader yet (one response, derived)');
  key('scrub-busy-key', '', 'worker busy with a /large response');
  key('scrub-mark waiting', '', '/fast waiting');
  key('scrub-mark answered', '', '/fast answered');
  root.appendChild(legend);

  // --- panels -----------------------------------------------------------
  var grid = el('div', 'scrub-panels');
  root.appendChild(grid);
  var fastTop = data.fast_max_ms * 1.08;

  function axis(cls, labels) {
    var a = el('div', cls);
    labels.forEach(function (l) {
      var s = el('span', '', l[1]);
      s.style[cls === 'scrub-yaxis' ? 'bottom' : 'left'] = l[0];
      a.appendChild(s);
    });
    return a;
  }

  var views = data.panels.map(function (p) {
    var v = { data: p };
    var box = el('section', 'scrub-panel');
    box.setAttribute('role', 'group');
    box.setAttribute('aria-label', p.route + ', run ' + p.run_id);
    box.dataset.route = p.route;
    box.dataset.run = p.run_id;
    box.appendChild(el('h3', '', p.route + ' \u00b7 run ' + p.run_id));
    box.appendChild(el('p', 'scrub-note', p.note));

    // Bytes: all responses summed, then each response.
    var n = p.responses.length;
    box.appendChild(
      el('p', 'scrub-label', 'Where the bytes of the ' + n + ' slow responses are (' + mib(p.total) + ')')
    );
    v.bar = el('div', 'scrub-bar');
    v.bar.setAttribute('role', 'img');
    v.segs = data.layers.map(function (l, i) {
      var s = el('span', 'scrub-seg');
      s.style.background = l.color;
      s.dataset.layer = String(i);
      s.title = l.label;
      v.bar.appendChild(s);
      return s;
    });
    v.gap = el('span', 'scrub-gap', 'no socket sample at this instant');
    v.bar.appendChild(v.gap);
    box.appendChild(v.bar);
    v.text = el('p', 'scrub-text');
    box.appendChild(v.text);
    v.responses = p.responses.map(function (r) {
      var row = el('div', 'scrub-resp');
      row.appendChild(el('span', 'scrub-lab', 'client ' + r.client));
      var bar = el('div', 'scrub-bar scrub-small');
      bar.setAttribute('role', 'img');
      var read = el('span', 'scrub-seg');
      read.style.background = data.layers[0].color;
      read.dataset.layer = 'read';
      var queue = el('span', 'scrub-seg');
      queue.style.background = data.layers[1].color;
      queue.dataset.layer = 'queue';
      var rest = el('span', 'scrub-seg scrub-rest');
      rest.dataset.layer = 'rest';
      bar.appendChild(read);
      bar.appendChild(queue);
      bar.appendChild(rest);
      row.appendChild(bar);
      box.appendChild(row);
      return { data: r, bar: bar, read: read, queue: queue, rest: rest };
    });

    // Workers.
    box.appendChild(el('p', 'scrub-label', 'Workers'));
    v.lanes = p.workers.lanes.map(function (lane, i) {
      var row = el('div', 'scrub-lane');
      row.appendChild(el('span', 'scrub-lab', lane.name || 'worker ' + (i + 1)));
      var track = el('div', 'scrub-track');
      var spans = lane.spans.map(function (s) {
        var b = el('span', 'scrub-span');
        b.style.left = share(s.start_ms, endMs);
        b.title = (s.client === null ? 'a response' : 'client ' + s.client) + ', until ' + s.until;
        track.appendChild(b);
        return b;
      });
      var cursor = el('span', 'scrub-cursor');
      track.appendChild(cursor);
      row.appendChild(track);
      var state = el('span', 'scrub-state');
      row.appendChild(state);
      box.appendChild(row);
      return { data: lane, row: row, spans: spans, cursor: cursor, state: state };
    });
    if (!p.workers.known) {
      box.appendChild(el('p', 'scrub-note', p.workers.note));
    }

    // /fast: x when it was scheduled, y how long it has waited.
    box.appendChild(el('p', 'scrub-label', '/fast requests: waited so far, by the time each was sent'));
    var plotRow = el('div', 'scrub-plotrow');
    plotRow.appendChild(
      axis('scrub-yaxis', [
        ['0%', '0'],
        ['50%', duration(fastTop / 2)],
        ['100%', duration(fastTop)]
      ])
    );
    v.plot = el('div', 'scrub-plot');
    v.plot.setAttribute('role', 'img');
    v.marks = p.fast.map(function (f) {
      var m = el('span', 'scrub-mark');
      m.style.left = share(f.scheduled_ms, endMs);
      v.plot.appendChild(m);
      return m;
    });
    v.cursor = el('span', 'scrub-cursor');
    v.plot.appendChild(v.cursor);
    plotRow.appendChild(v.plot);
    box.appendChild(plotRow);
    box.appendChild(
      axis('scrub-xaxis', [
        ['0%', '0 s'],
        ['50%', seconds(endMs / 2)],
        ['100%', seconds(endMs)]
      ])
    );
    v.status = el('p', 'scrub-status');
    box.appendChild(v.status);
    v.box = box;
    grid.appendChild(box);
    return v;
  });

  var summary = el('p', 'scrub-summary');
  summary.setAttribute('aria-live', 'polite');
  root.appendChild(summary);

  // --- one instant ------------------------------------------------------
  function drawBytes(v, k) {
    var p = v.data;
    var frame = p.bytes[k];
    v.box.dataset.sampled = frame ? 'true' : 'false';
    v.gap.hidden = !!frame;
    var parts = [];
    v.segs.forEach(function (s, i) {
      var b = frame ? frame[i] : 0;
      s.dataset.bytes = String(b);
      s.style.width = share(b, p.total);
      if (b > 0) {
        parts.push(data.layers[i].label + ' ' + mib(b));
      }
    });
    var temp = p.temp && p.temp[k];
    if (temp) {
      parts.push("NGINX's temp files (logical size) " + mib(temp));
    }
    var said = frame ? parts.join('; ') : 'no socket sample at this instant';
    v.text.textContent = said;
    v.bar.setAttribute('aria-label', 'Bytes of all slow responses: ' + said);
    v.responses.forEach(function (r) {
      var read = r.data.read[k];
      var queue = r.data.queue[k];
      var known = read !== null;
      var q = queue === null ? 0 : queue;
      var rest = known ? Math.max(0, r.data.bytes - read - q) : 0;
      r.read.dataset.bytes = String(known ? read : 0);
      r.queue.dataset.bytes = String(q);
      r.rest.dataset.bytes = String(rest);
      r.read.style.width = share(known ? read : 0, r.data.bytes);
      r.queue.style.width = share(q, r.data.bytes);
      r.rest.style.width = share(rest, r.data.bytes);
      r.bar.setAttribute(
        'aria-label',
        'client ' +
          r.data.client +
          (known
            ? ': read ' + mib(read) + (queue === null ? '' : ', in its receive queue ' + mib(q)) + ', not at the reader yet ' + mib(rest)
            : ': no progress sample at this instant')
      );
    });
  }

  function drawWorkers(v, tMs) {
    var busy = 0;
    v.lanes.forEach(function (lane) {
      var on = null;
      lane.data.spans.forEach(function (s, i) {
        var b = lane.spans[i];
        var shown = s.start_ms <= tMs;
        b.hidden = !shown;
        b.style.width = shown ? share(Math.min(s.end_ms, tMs) - s.start_ms, endMs) : '0%';
        if (s.start_ms <= tMs && tMs < s.end_ms) {
          on = s;
        }
      });
      lane.cursor.style.left = share(tMs, endMs);
      lane.row.dataset.busy = on ? 'true' : 'false';
      lane.state.textContent = on ? 'busy' + (on.client === null ? '' : ' (client ' + on.client + ')') : 'free';
      if (on) {
        busy += 1;
      }
    });
    v.box.dataset.busy = String(busy);
    return busy;
  }

  function drawFast(v, tMs) {
    var counts = { waiting: 0, answered: 0, failed: 0 };
    v.data.fast.forEach(function (f, i) {
      var m = v.marks[i];
      var state;
      var waited = 0;
      if (f.scheduled_ms > tMs) {
        state = 'future';
      } else if (f.ok && f.end_ms <= tMs) {
        state = 'answered';
        waited = f.end_ms - f.started_ms;
      } else if (!f.ok && f.started_ms <= tMs) {
        state = 'failed';
        waited = fastTop;
      } else {
        state = 'waiting';
        waited = Math.max(0, tMs - f.started_ms);
      }
      if (state !== 'future') {
        counts[state] += 1;
      }
      m.dataset.state = state;
      m.className = 'scrub-mark ' + state;
      m.hidden = state === 'future';
      m.style.bottom = share(waited, fastTop);
      m.title = state === 'waiting' ? 'waiting ' + duration(waited) : state === 'answered' ? 'answered after ' + duration(waited) : 'failed';
    });
    v.cursor.style.left = share(tMs, endMs);
    v.box.dataset.waiting = String(counts.waiting);
    v.box.dataset.answered = String(counts.answered);
    v.box.dataset.failed = String(counts.failed);
    v.plot.setAttribute(
      'aria-label',
      '/fast requests: ' + counts.waiting + ' waiting, ' + counts.answered + ' answered' + (counts.failed ? ', ' + counts.failed + ' failed' : '')
    );
    return counts;
  }

  function render(k) {
    current = Math.max(0, Math.min(last, k));
    var tMs = current * dtMs;
    now.textContent = 't = ' + seconds(tMs);
    slider.setAttribute('aria-valuetext', seconds(tMs));
    root.dataset.tMs = String(tMs);
    var lines = [];
    views.forEach(function (v) {
      v.box.dataset.tMs = String(tMs);
      drawBytes(v, current);
      var busy = drawWorkers(v, tMs);
      var c = drawFast(v, tMs);
      var line =
        (v.lanes.length ? 'workers busy ' + busy + ' of ' + v.lanes.length + '; ' : '') +
        '/fast: ' + c.waiting + ' waiting, ' + c.answered + ' answered' + (c.failed ? ', ' + c.failed + ' failed' : '');
      v.status.textContent = line;
      lines.push(v.data.route + ': ' + line);
    });
    if (!playing) {
      summary.textContent = 'At ' + seconds(tMs) + ': ' + lines.join('. ') + '.';
    }
  }

  // --- playing ----------------------------------------------------------
  // A timer, not requestAnimationFrame: frames are 100 ms apart, and a timer
  // also runs where nothing is painted (headless Chromium's virtual time).
  var playing = false;
  var timer = 0;
  var startWall = 0;
  var startMs = 0;

  function tick() {
    var tMs = startMs + (performance.now() - startWall) * speed;
    var k = Math.min(last, Math.floor(tMs / dtMs + 1e-6));
    if (k !== current) {
      slider.value = String(k);
      render(k);
    }
    if (k >= last) {
      stop();
    }
  }

  function start() {
    if (current >= last) {
      current = 0;
    }
    playing = true;
    play.textContent = 'Pause';
    play.setAttribute('aria-pressed', 'true');
    startMs = current * dtMs;
    startWall = performance.now();
    timer = window.setInterval(tick, 25);
  }

  function stop() {
    playing = false;
    window.clearInterval(timer);
    play.textContent = 'Play';
    play.setAttribute('aria-pressed', 'false');
    render(current);
  }

  function restart(v) {
    if (playing) {
      startMs = current * dtMs;
      startWall = performance.now();
    }
    speed = v;
  }

  play.addEventListener('click', function () {
    if (playing) {
      stop();
    } else {
      start();
    }
  });
  slider.addEventListener('input', function () {
    if (playing) {
      stop();
    }
    render(parseInt(slider.value, 10) || 0);
  });

  var wanted = /^#scrub-t=([0-9.]+)$/.exec(window.location.hash);
  var first = wanted ? Math.round((parseFloat(wanted[1]) * 1000) / dtMs) : 0;
  slider.value = String(first);
  render(first);
  root.hidden = false;
  root.dataset.ready = 'true';
  if (wanted) {
    document.getElementById('scrub').scrollIntoView();
  }
})();
