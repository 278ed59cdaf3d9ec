/**
 * The script and styles of the explorer's status views (Aggregate, Queue), served after the page's own script in
 * `app.js`. Like the page's, the script builds every element with `textContent`, never from markup. It asks
 * `api/views` which views the server offers, shows their tabs (opening Aggregate first when it is there), and
 * refreshes the visible view every {@link STATUS_REFRESH_MS} ms.
 */

/** How often a visible status view is read again, ms. */
const STATUS_REFRESH_MS = 3000;

/** The views' styles. */
export const STATUS_CSS: string = `
.sortable th{cursor:pointer;user-select:none;white-space:nowrap}
.sortable th[aria-sort="ascending"]::after{content:" \\25B2"}.sortable th[aria-sort="descending"]::after{content:" \\25BC"}
tr.failing td{background:#fdf0f0}tr.stopped td{color:#7a8591}
td.err{color:#8a1c1c;min-width:12rem;overflow-wrap:anywhere}
.status-view{overflow-x:auto}.sortable td.url{min-width:10rem;word-break:normal;overflow-wrap:anywhere}
body.wide main{grid-template-columns:1fr}body.wide #tree-pane{display:none}
`;

/** The views' script. */
export const STATUS_JS: string = `
(function () {
  var $ = function (id) { return document.getElementById(id); };
  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) for (var k in attrs) if (attrs[k] !== undefined && attrs[k] !== null) node.setAttribute(k, String(attrs[k]));
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === undefined || c === null) continue;
      node.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
    }
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function api(path) {
    return fetch('api/' + path, { headers: { accept: 'application/json' } }).then(function (r) {
      return r.json().then(function (b) { if (!r.ok) throw new Error((b && b.error && b.error.message) || ('HTTP ' + r.status)); return b; });
    });
  }
  function when(t) { return t === undefined ? '—' : new Date(t).toISOString().replace('T', ' ').replace(/:\\d\\d\\.\\d+Z$/, 'Z'); }
  function span(ms) {
    if (ms === undefined) return '—';
    var s = Math.round(ms / 1000);
    if (s < 120) return s + ' s';
    if (s < 7200) return Math.round(s / 60) + ' min';
    if (s < 172800) return (s / 3600).toFixed(1) + ' h';
    return (s / 86400).toFixed(1) + ' d';
  }
  /** A table sorted by a column chosen by clicking its header (again: the other way); undefined values last. */
  function sortedTable(id, columns, rows, sort, rowClass) {
    var order = rows.slice();
    if (sort.key !== null) {
      var col = columns.filter(function (c) { return c.key === sort.key; })[0];
      order.sort(function (a, b) {
        var x = col.value(a), y = col.value(b);
        if (x === y) return 0;
        if (x === undefined) return 1;
        if (y === undefined) return -1;
        return (x < y ? -1 : 1) * sort.dir;
      });
    }
    var head = el('tr', null);
    columns.forEach(function (c) {
      var th = el('th', { scope: 'col', 'data-key': c.key, tabindex: '0', 'aria-sort': sort.key === c.key ? (sort.dir > 0 ? 'ascending' : 'descending') : 'none', title: c.title }, c.label);
      var pick = function () { sort.dir = sort.key === c.key ? -sort.dir : 1; sort.key = c.key; sort.redraw(); };
      th.addEventListener('click', pick);
      th.addEventListener('keydown', function (e) { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); pick(); } });
      head.appendChild(th);
    });
    var body = el('tbody', null);
    order.forEach(function (r) {
      var tr = el('tr', { class: rowClass(r), 'data-id': r.id || r.run });
      columns.forEach(function (c) { tr.appendChild(el('td', { class: c.cls || '' }, c.show(r))); });
      body.appendChild(tr);
    });
    return el('table', { id: id, class: 'sortable' }, el('thead', null, head), body);
  }

  var AGG = [
    { key: 'id', label: 'Source', value: function (s) { return s.id; }, show: function (s) { return s.id; } },
    { key: 'url', label: 'URL', cls: 'url', value: function (s) { return s.url; }, show: function (s) { return s.url + (s.credentialsEnv ? ' (credentials: $' + s.credentialsEnv + ')' : ''); } },
    { key: 'mode', label: 'mode', value: function (s) { return s.mode; }, show: function (s) { return s.mode; } },
    { key: 'state', label: 'state', value: function (s) { return s.state; }, show: function (s) { return s.state + (s.failures > 1 ? ' ×' + s.failures : ''); } },
    { key: 'lastSync', label: 'last sync', cls: 'time', value: function (s) { return s.lastSync; }, show: function (s) { return when(s.lastSync); } },
    { key: 'lag', label: 'lag', cls: 'num time', value: function (s) { return s.lagMs; }, show: function (s) { return span(s.lagMs); } },
    { key: 'resources', label: 'resources', cls: 'num', value: function (s) { return s.resources; }, show: function (s) { return s.resources === undefined ? '—' : s.resources; } },
    { key: 'changes', label: 'changes', title: 'resources created / updated / deleted since the Source was added', cls: 'num', value: function (s) { return s.totals.created + s.totals.updated + s.totals.deleted; },
      show: function (s) { return s.totals.created + ' / ' + s.totals.updated + ' / ' + s.totals.deleted; } },
    { key: 'syncs', label: 'syncs/errors', title: 'successful syncs / failed attempts', cls: 'num', value: function (s) { return s.totals.errors; }, show: function (s) { return s.totals.syncs + ' / ' + s.totals.errors; } },
    { key: 'error', label: 'last error', cls: 'err', value: function (s) { return s.lastError && s.lastError.at; },
      show: function (s) { return s.lastError ? s.lastError.code + ': ' + s.lastError.message + ' (' + when(s.lastError.at) + ')' : '—'; } },
    { key: 'next', label: 'next attempt', cls: 'time', value: function (s) { return s.nextAttempt; }, show: function (s) { return when(s.nextAttempt); } },
  ];
  var QUEUE = [
    { key: 'destination', label: 'destination', cls: 'url', value: function (r) { return r.destination; }, show: function (r) { return r.destination; } },
    { key: 'run', label: 'run', cls: 'url', value: function (r) { return r.run; }, show: function (r) { return r.run; } },
    { key: 'waiting', label: 'waiting', cls: 'num', value: function (r) { return r.chunks.waiting; }, show: function (r) { return r.chunks.waiting; } },
    { key: 'active', label: 'active', cls: 'num', value: function (r) { return r.chunks.active; }, show: function (r) { return r.chunks.active; } },
    { key: 'done', label: 'done', cls: 'num', value: function (r) { return r.chunks.done; }, show: function (r) { return r.chunks.done + ' of ' + r.chunks.total; } },
    { key: 'failed', label: 'failed', cls: 'num', value: function (r) { return r.chunks.failed; }, show: function (r) { return r.chunks.failed; } },
    { key: 'rdone', label: 'resources done', cls: 'num', value: function (r) { return r.resources.done; }, show: function (r) { return r.resources.done; } },
    { key: 'rfailed', label: 'resources failed', cls: 'num', value: function (r) { return r.resources.failed; }, show: function (r) { return r.resources.failed; } },
    { key: 'updated', label: 'last change', cls: 'time', value: function (r) { return r.updatedAt; }, show: function (r) { return when(r.updatedAt); } },
  ];

  var views = {
    aggregate: { columns: AGG, last: null, sort: { key: null, dir: 1 },
      rowClass: function (s) { return s.failing ? 'failing' : s.state === 'stopped' ? 'stopped' : ''; },
      draw: function (box, v, view) {
        var failing = v.sources.filter(function (s) { return s.failing; }).length;
        box.appendChild(el('p', { id: 'aggregate-summary' }, v.sources.length + ' Sources, ' + failing + ' failing · read ' + when(v.at)));
        if (v.sources.length === 0) box.appendChild(el('p', { class: 'muted' }, 'No Source yet.'));
        else box.appendChild(sortedTable('aggregate-table', AGG, v.sources, view.sort, view.rowClass));
      } },
    queue: { columns: QUEUE, last: null, sort: { key: null, dir: 1 },
      rowClass: function (r) { return r.chunks.failed > 0 ? 'failing' : ''; },
      draw: function (box, v, view) {
        box.appendChild(el('p', { id: 'queue-summary' }, 'Queue ', el('span', { class: 'url' }, v.queue), ': ' + v.runs.length + ' runs · read ' + when(v.at)));
        if (v.runs.length === 0) box.appendChild(el('p', { class: 'muted' }, 'No run on the queue.'));
        else box.appendChild(sortedTable('queue-table', QUEUE, v.runs, view.sort, view.rowClass));
      } },
  };
  function redraw(name) {
    var view = views[name], box = $(name + '-view');
    clear(box);
    if (view.error) box.appendChild(el('p', { class: 'bad' }, view.error));
    if (view.last) view.draw(box, view.last, view);
  }
  function load(name) {
    return api(name).then(function (v) { views[name].last = v; views[name].error = null; redraw(name); },
      function (e) { views[name].error = String(e && e.message || e); redraw(name); });
  }
  Object.keys(views).forEach(function (name) { views[name].sort.redraw = function () { redraw(name); }; });
  var timer = null;
  function visible() { return Object.keys(views).filter(function (n) { return !$('panel-' + n).hidden; })[0]; }
  function tick() { var n = visible(); if (n && !document.hidden) load(n); }
  // a status view takes the whole width (the documents' pane is for the other tabs)
  document.querySelectorAll('#tabs button').forEach(function (b) {
    b.addEventListener('click', function () { document.body.classList.toggle('wide', !!views[b.getAttribute('data-panel')]); });
  });
  api('views').then(function (offered) {
    Object.keys(views).forEach(function (name) {
      if (!offered[name]) return;
      var tab = $('tab-' + name);
      tab.hidden = false;
      tab.addEventListener('click', function () { load(name); });
    });
    if (offered.aggregate || offered.queue) timer = setInterval(tick, ${STATUS_REFRESH_MS});
    if (offered.aggregate) $('tab-aggregate').click();
    else if (offered.queue) $('tab-queue').click();
  }, function () { /* an explorer without status views */ });
  window.addEventListener('pagehide', function () { if (timer) clearInterval(timer); });
})();
`;
