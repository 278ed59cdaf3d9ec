/**
 * The explorer page: one HTML document, one style sheet and one script, written by hand, served from the
 * same origin (the Content-Security-Policy allows nothing else). The script builds every element with
 * `textContent` and `setAttribute`, never from markup, so nothing a Source sends is parsed as HTML.
 */

/** The page. It names its script and style sheet relatively, so it works under any mount path. */
export const INDEX_HTML: string = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ResourceSync explorer</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="app.css">
<script src="app.js" defer></script>
</head>
<body>
<header>
  <h1>ResourceSync explorer</h1>
  <p><span id="source" class="url"></span> <span id="summary" class="muted"></span></p>
</header>
<main>
  <section id="tree-pane" aria-label="Documents">
    <div class="bar"><h2>Documents</h2><button id="reload" type="button">Reload</button></div>
    <div id="tree" role="tree"><p class="muted">Reading the Source…</p></div>
  </section>
  <section id="view">
    <nav id="tabs" role="tablist">
      <button type="button" role="tab" id="tab-entries" data-panel="entries" aria-selected="true">Entries</button>
      <button type="button" role="tab" id="tab-timeline" data-panel="timeline" aria-selected="false">Timeline</button>
      <button type="button" role="tab" id="tab-check" data-panel="check" aria-selected="false">Check</button>
      <button type="button" role="tab" id="tab-channels" data-panel="channels" aria-selected="false" hidden>Channels</button>
      <button type="button" role="tab" id="tab-aggregate" data-panel="aggregate" aria-selected="false" hidden>Aggregate</button>
      <button type="button" role="tab" id="tab-queue" data-panel="queue" aria-selected="false" hidden>Queue</button>
    </nav>
    <div id="panel-entries" class="panel" role="tabpanel">
      <p id="doc-title" class="muted">Choose a document on the left to see its entries.</p>
      <form id="search" hidden>
        <input id="q" type="search" placeholder="Filter by URL (substring)" aria-label="Filter by URL" maxlength="200">
        <button type="submit">Search</button>
      </form>
      <p id="doc-facts" class="muted"></p>
      <div id="entries"></div>
      <div class="pager"><button id="prev" type="button" hidden>&larr; Previous</button><span id="page-info" class="muted"></span><button id="next" type="button" hidden>Next &rarr;</button></div>
    </div>
    <div id="panel-timeline" class="panel" role="tabpanel" hidden>
      <p class="muted">Changes listed by the Change Lists, most recent first.</p>
      <div id="timeline"></div>
      <div class="pager"><button id="tl-prev" type="button" hidden>&larr; Newer</button><span id="tl-info" class="muted"></span><button id="tl-next" type="button" hidden>Older &rarr;</button></div>
    </div>
    <div id="panel-check" class="panel" role="tabpanel" hidden>
      <p><button id="run-check" type="button">Run check</button> <span class="muted">Validates every document, the rules that span documents, dump packages and a sample of resources.</span></p>
      <div id="check-report"></div>
    </div>
    <div id="panel-channels" class="panel" role="tabpanel" hidden>
      <div id="channels"></div>
    </div>
    <div id="panel-aggregate" class="panel" role="tabpanel" hidden><div id="aggregate-view" class="status-view"></div></div>
    <div id="panel-queue" class="panel" role="tabpanel" hidden><div id="queue-view" class="status-view"></div></div>
  </section>
</main>
</body>
</html>
`;

/** The style sheet. */
export const APP_CSS: string = `
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2733;background:#f6f8fa}
header{background:#1f3a5a;color:#fff;padding:.7rem 1.2rem}
header h1{font-size:1.2rem;margin:0 0 .2rem}
header p{margin:0}header .muted{color:#c5d3e3}
main{display:grid;grid-template-columns:minmax(18rem,30%) 1fr;gap:1rem;padding:1rem 1.2rem}
section{background:#fff;border:1px solid #d6dde5;border-radius:.4rem;padding:.7rem .9rem;min-width:0}
h2{font-size:1rem;margin:0}
.bar{display:flex;justify-content:space-between;align-items:center;margin-bottom:.5rem}
button{font:inherit;border:1px solid #b9c6d3;background:#f3f6f9;border-radius:.3rem;padding:.2rem .6rem;cursor:pointer}
button:hover{background:#e6edf4}
#tree ul{list-style:none;margin:0;padding-left:1rem;border-left:1px dotted #c3ced9}
#tree>ul{padding-left:0;border-left:0}
#tree li{margin:.15rem 0}
.doc{border:0;background:none;padding:.1rem .3rem;text-align:left;width:100%;display:block;border-radius:.25rem}
.doc[aria-current="true"]{background:#dde9f6}
.kind{font-weight:600;color:#1f3a5a}
.url,code,td.loc{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.8rem;word-break:break-all}
.muted{color:#5b6877}
.bad{color:#8a1c1c}
#tabs{display:flex;gap:.3rem;border-bottom:1px solid #d6dde5;margin-bottom:.6rem}
#tabs button{border-bottom:0;border-radius:.3rem .3rem 0 0}
#tabs button[aria-selected="true"]{background:#1f3a5a;color:#fff;border-color:#1f3a5a}
#search{display:flex;gap:.3rem;margin:.3rem 0}
#q{flex:1;font:inherit;padding:.2rem .4rem;border:1px solid #b9c6d3;border-radius:.3rem}
table{border-collapse:collapse;width:100%;font-size:.85rem}
#entries td.loc{min-width:14rem}
td.time{white-space:nowrap}td.md{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.8rem;overflow-wrap:anywhere}
th,td{text-align:left;padding:.25rem .4rem;border-bottom:1px solid #e8edf2;vertical-align:top}
th{background:#f3f6f9}td.num{text-align:right;font-variant-numeric:tabular-nums}
.pager{display:flex;gap:.6rem;align-items:center;margin-top:.5rem}
.verdict{display:inline-block;padding:.2rem .6rem;border-radius:.3rem;font-weight:600}
.ok{background:#dff3e4;color:#145c2c}.fail{background:#fbe2e2;color:#8a1c1c}
.error{color:#8a1c1c;font-weight:600}.warning{color:#8a5a00;font-weight:600}
.change-created{color:#145c2c}.change-updated{color:#1f4f8a}.change-deleted{color:#8a1c1c}
.notice{background:#fff6dd;border:1px solid #e8d48a;padding:.3rem .5rem;border-radius:.3rem}
`;

/** The script: reads the JSON API and builds the page from it. */
export const APP_JS: string = `'use strict';
(function () {
  var $ = function (id) { return document.getElementById(id); };
  /** An element with attributes and children; strings become text nodes. */
  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) for (var k in attrs) if (attrs[k] !== undefined && attrs[k] !== null) node.setAttribute(k, String(attrs[k]));
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === undefined || c === null || c === false) continue;
      node.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
    }
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function api(path, params) {
    var qs = new URLSearchParams(params || {}).toString();
    return fetch('api/' + path + (qs ? '?' + qs : ''), { headers: { accept: 'application/json' } }).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) throw new Error((body && body.error && body.error.message) || ('HTTP ' + r.status));
        return body;
      });
    });
  }
  function size(b) {
    if (b < 1024) return b + ' B';
    if (b < 1048576) return (b / 1024).toFixed(1) + ' KB';
    return (b / 1048576).toFixed(1) + ' MB';
  }
  function link(url) {
    return /^https?:\\/\\//i.test(url) ? el('a', { href: url, rel: 'noreferrer noopener', target: '_blank', title: url }, short(url)) : document.createTextNode(url);
  }
  function failure(node, error) { clear(node); node.appendChild(el('p', { class: 'bad' }, String(error && error.message || error))); }

  var state = { doc: null, kind: null, page: 0, q: '', tl: 0, origin: '' };
  /** A URL of the Source's origin as its path (the full URL is in the title). */
  function short(url) { return state.origin && url.indexOf(state.origin + '/') === 0 ? url.slice(state.origin.length) : url; }

  // Tabs
  var tabs = Array.prototype.slice.call(document.querySelectorAll('#tabs button'));
  function show(name) {
    tabs.forEach(function (t) {
      var on = t.getAttribute('data-panel') === name;
      t.setAttribute('aria-selected', on ? 'true' : 'false');
      $('panel-' + t.getAttribute('data-panel')).hidden = !on;
    });
    if (name === 'timeline') loadTimeline();
    if (name === 'channels') loadChannels();
  }
  tabs.forEach(function (t) { t.addEventListener('click', function () { show(t.getAttribute('data-panel')); }); });

  // The document tree
  function describe(n) {
    var facts = [];
    if (n.at) facts.push('at ' + n.at);
    if (n.from) facts.push('from ' + n.from);
    if (n.from || n.until) facts.push(n.until ? 'until ' + n.until : 'open');
    if (n.status) facts.push('HTTP ' + n.status);
    else if (n.kind === 'package') facts.push(size(n.bytes));
    else facts.push(n.entries + (n.entries === 1 ? ' entry' : ' entries') + ', ' + size(n.bytes));
    return facts.join(' · ');
  }
  function treeNode(n) {
    var button = el('button', { type: 'button', class: 'doc', 'data-url': n.url, 'data-kind': n.kind || '', title: n.url },
      el('span', { class: 'kind' }, n.kind || ('unidentified' + (n.capability ? ' (' + n.capability + ')' : ''))), ' ',
      el('span', { class: 'url' }, short(n.url)), el('br'), el('span', { class: 'muted' }, describe(n)));
    button.addEventListener('click', function () {
      document.querySelectorAll('.doc[aria-current]').forEach(function (d) { d.removeAttribute('aria-current'); });
      button.setAttribute('aria-current', 'true');
      state.doc = n.url; state.kind = n.kind; state.page = 0; state.q = ''; $('q').value = '';
      show('entries');
      if (n.kind === 'notification-channel') {
        // A WebSub topic, not a document: nothing to list.
        $('doc-title').textContent = 'Notification channel ' + n.url;
        $('search').hidden = true; $('doc-facts').textContent = 'Notifications are pushed to subscribers through the hub; see the Capability List.';
        clear($('entries')); $('prev').hidden = true; $('next').hidden = true; $('page-info').textContent = '';
        return;
      }
      loadEntries();
    });
    var li = el('li', { role: 'treeitem' }, button);
    if (n.children.length > 0) li.appendChild(el('ul', { role: 'group' }, ...n.children.map(treeNode)));
    return li;
  }
  function loadTree(refresh) {
    var tree = $('tree');
    clear(tree); tree.appendChild(el('p', { class: 'muted' }, 'Reading the Source…'));
    api('tree', refresh ? { refresh: '1' } : {}).then(function (t) {
      $('source').textContent = t.source;
      try { state.origin = new URL(t.source).origin; } catch (e) { state.origin = ''; }
      $('summary').textContent = t.documents + ' documents, read ' + new Date(t.crawledAt).toLocaleTimeString();
      $('tab-channels').hidden = !t.channels;
      clear(tree);
      if (t.roots.length === 0) tree.appendChild(el('p', { class: 'muted' }, 'No ResourceSync document found.'));
      else tree.appendChild(el('ul', null, ...t.roots.map(treeNode)));
    }, function (e) { failure(tree, e); });
  }
  $('reload').addEventListener('click', function () { loadTree(true); });

  // Entries of a document (or of a package's manifest)
  function mdText(md) {
    if (!md) return '';
    var parts = [];
    ['capability', 'change', 'datetime', 'at', 'from', 'until', 'hash', 'length', 'type', 'path'].forEach(function (k) {
      if (md[k] !== undefined) parts.push(k + '=' + md[k]);
    });
    return parts.join(' ');
  }
  function entriesTable(rows) {
    if (rows.length === 0) return el('p', { class: 'muted' }, 'No entries.');
    return el('table', null,
      el('thead', null, el('tr', null, el('th', null, '#'), el('th', null, 'loc'), el('th', null, 'lastmod'), el('th', null, 'metadata'))),
      el('tbody', null, ...rows.map(function (r) {
        var change = r.md && r.md.change;
        return el('tr', change ? { class: 'change-' + change } : null,
          el('td', { class: 'num' }, r.position + 1), el('td', { class: 'loc' }, link(r.loc)),
          el('td', { class: 'time' }, r.lastmod || ''), el('td', { class: 'md' }, mdText(r.md)));
      })));
  }
  function pager(prev, next, info, page, more, onPage) {
    prev.hidden = page === 0; next.hidden = !more;
    prev.onclick = function () { onPage(page - 1); };
    next.onclick = function () { onPage(page + 1); };
  }
  function loadEntries() {
    var box = $('entries');
    var isPackage = state.kind === 'package';
    $('doc-title').textContent = (isPackage ? 'Package ' : 'Document ') + state.doc;
    $('search').hidden = false;
    clear(box); box.appendChild(el('p', { class: 'muted' }, 'Reading…'));
    $('doc-facts').textContent = '';
    var params = { doc: state.doc, page: String(state.page) };
    if (state.q) params.q = state.q;
    api(isPackage ? 'package' : 'entries', params).then(function (r) {
      var p = isPackage ? r.manifest : r;
      var facts = [];
      if (isPackage) facts.push(r.files + ' files, ' + size(r.bytes) + ' zipped, ' + size(r.uncompressed) + ' unzipped');
      if (!p) { $('doc-facts').textContent = facts.concat('no manifest.xml').join('; '); clear(box); return; }
      if (p.kind) facts.push((isPackage ? 'manifest: ' : '') + p.kind);
      var md = mdText(p.md); if (md) facts.push(md);
      if (p.total !== undefined) facts.push(p.total + (p.q ? ' matching' : '') + ' entries');
      else if (p.listed !== undefined && !p.q) facts.push(p.listed + ' entries');
      $('doc-facts').textContent = facts.join('; ');
      clear(box);
      if (p.scanLimitHit) box.appendChild(el('p', { class: 'notice', id: 'scan-limit' }, 'Stopped after reading ' + p.scanned + ' entries (the scan limit): later entries are not searched.'));
      box.appendChild(entriesTable(p.entries));
      var first = p.page * p.pageSize;
      $('page-info').textContent = p.entries.length === 0 ? '' : 'entries ' + (first + 1) + '–' + (first + p.entries.length) + ' (page ' + (p.page + 1) + ')';
      pager($('prev'), $('next'), $('page-info'), p.page, p.more, function (n) { state.page = n; loadEntries(); });
    }, function (e) { failure(box, e); });
  }
  $('search').addEventListener('submit', function (ev) {
    ev.preventDefault();
    state.q = $('q').value; state.page = 0;
    if (state.doc) loadEntries();
  });

  // Timeline
  function loadTimeline() {
    var box = $('timeline');
    clear(box); box.appendChild(el('p', { class: 'muted' }, 'Reading the Change Lists…'));
    api('changes', { page: String(state.tl) }).then(function (t) {
      clear(box);
      if (t.lists === 0) { box.appendChild(el('p', { class: 'muted' }, 'This Source has no Change List.')); }
      else box.appendChild(el('table', null,
        el('thead', null, el('tr', null, el('th', null, 'when'), el('th', null, 'change'), el('th', null, 'resource'), el('th', null, 'Change List'))),
        el('tbody', null, ...t.entries.map(function (c) {
          return el('tr', { class: 'change-' + (c.change || '') }, el('td', { class: 'time' }, c.datetime || ''), el('td', null, c.change || ''),
            el('td', { class: 'loc' }, link(c.loc)), el('td', { class: 'url', title: c.list }, short(c.list)));
        }))));
      $('tl-info').textContent = t.total + ' changes in ' + t.lists + ' Change List' + (t.lists === 1 ? '' : 's') + '; page ' + (t.page + 1);
      pager($('tl-prev'), $('tl-next'), $('tl-info'), t.page, t.more, function (n) { state.tl = n; loadTimeline(); });
    }, function (e) { failure(box, e); });
  }

  // Check
  $('run-check').addEventListener('click', function () {
    var box = $('check-report');
    var button = $('run-check');
    button.disabled = true;
    clear(box); box.appendChild(el('p', { class: 'muted' }, 'Checking… (this reads every document)'));
    api('check', { refresh: '1' }).then(function (r) {
      button.disabled = false;
      clear(box);
      box.appendChild(el('p', null,
        el('span', { id: 'verdict', class: 'verdict ' + (r.conformant ? 'ok' : 'fail') }, r.conformant ? 'conformant' : 'not conformant'), ' ',
        el('span', { class: 'muted' }, r.errors + ' errors, ' + r.warnings + ' warnings; ' + r.documents.length + ' documents; ' +
          r.sampled + ' of ' + r.resources + ' listed resources sampled; ' + (r.durationMs / 1000).toFixed(1) + ' s')));
      box.appendChild(el('h3', null, 'Issues (' + r.issues.length + ')'));
      if (r.issues.length === 0) box.appendChild(el('p', { id: 'no-issues' }, 'None.'));
      else box.appendChild(el('table', { id: 'issues' },
        el('thead', null, el('tr', null, el('th', null, 'severity'), el('th', null, 'code'), el('th', null, 'where'), el('th', null, 'message'), el('th', null, 'section'))),
        el('tbody', null, ...r.issues.map(function (i) {
          return el('tr', null, el('td', { class: i.severity }, i.severity), el('td', null, el('code', null, i.code)),
            el('td', { class: 'url' }, i.url + (i.line !== undefined ? ':' + i.line : '')), el('td', null, i.message), el('td', null, i.section));
        }))));
    }, function (e) { button.disabled = false; failure(box, e); });
  });

  // Notification channels (serve)
  function loadChannels() {
    var box = $('channels');
    clear(box);
    api('channels').then(function (c) {
      box.appendChild(el('p', null, 'Hub: ', el('span', { class: 'url' }, c.hub)));
      box.appendChild(el('h3', null, 'Channels (' + c.channels.length + ')'));
      box.appendChild(el('table', { id: 'channel-list' },
        el('thead', null, el('tr', null, el('th', null, 'topic'), el('th', null, 'subscribers'))),
        el('tbody', null, ...c.channels.map(function (t) { return el('tr', null, el('td', { class: 'url' }, t.topic), el('td', { class: 'num' }, t.subscribers)); }))));
      if (c.subscriptions) {
        box.appendChild(el('h3', null, 'Subscribers (' + c.subscriptions.length + ')'));
        if (c.subscriptions.length > 0) box.appendChild(el('table', null,
          el('thead', null, el('tr', null, el('th', null, 'callback'), el('th', null, 'topic'), el('th', null, 'state'),
            el('th', null, 'last delivery'), el('th', null, 'failures'), el('th', null, 'lease ends'))),
          el('tbody', null, ...c.subscriptions.map(function (s) {
            var when = function (t) { return t === undefined ? '—' : new Date(t).toISOString(); };
            return el('tr', { class: 'sub-' + s.state }, el('td', { class: 'url' }, s.callback), el('td', { class: 'url' }, s.topic),
              el('td', null, s.state === 'given-up' ? 'given up' : s.state), el('td', null, when(s.lastDeliveryAt)),
              el('td', { class: 'num' }, s.failures), el('td', null, when(s.expiresAt)));
          }))));
      }
    }, function (e) { failure(box, e); });
  }

  loadTree(false);
})();
`;
