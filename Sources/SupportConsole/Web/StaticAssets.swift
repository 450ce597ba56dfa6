/// The stylesheet and the one small script, served by the binary from `/static/` (no CDN, no
/// build step). The CSP allows scripts and styles from this origin only.
enum StaticAssets {
    static let stylesheet = """
        :root { --ink: #1d2330; --muted: #5f6b7a; --line: #dde2e8; --paper: #ffffff; --wash: #f4f6f9;
                --accent: #2456c4; --ok: #1d7a46; --warn: #a36100; --bad: #b3261e; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--wash); }
        a { color: var(--accent); }
        header.top { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.25rem; padding: .6rem 1rem;
                     background: var(--ink); color: #fff; }
        header.top a { color: #fff; text-decoration: none; }
        header.top .brand { font-weight: 700; letter-spacing: .01em; }
        header.top nav { display: flex; flex-wrap: wrap; gap: .25rem .9rem; }
        header.top nav a[aria-current="page"] { text-decoration: underline; text-underline-offset: .3em; }
        header.top .who { margin-left: auto; display: flex; align-items: center; gap: .5rem; font-size: .9rem; color: #cfd6e0; }
        header.top .who button { background: transparent; color: #fff; border: 1px solid #8893a3; border-radius: 4px; padding: .15rem .5rem; cursor: pointer; }
        header.top form.find { display: flex; gap: .35rem; flex: 1 1 14rem; max-width: 26rem; }
        header.top form.find input { flex: 1 1 auto; }
        header.top form.find button { background: transparent; border-color: #8893a3; }
        /* The buyer's verdict: one click selects it all for pasting into a reply. */
        p.verdict { font-size: 1.05rem; font-weight: 600; padding: .6rem .75rem; border-left: 4px solid var(--accent); background: var(--wash);
                    user-select: all; -webkit-user-select: all; overflow-wrap: anywhere; margin: .25rem 0; }
        ol.timeline { list-style: none; padding: 0; margin: 0; }
        ol.timeline li { display: flex; flex-wrap: wrap; gap: .1rem .75rem; padding: .35rem 0; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
        ol.timeline time { color: var(--muted); font-variant-numeric: tabular-nums; flex: 0 0 auto; min-width: 11.5rem; }
        ol.timeline span { flex: 1 1 18rem; }
        main { max-width: 1200px; margin: 0 auto; padding: 1rem; }
        h1 { font-size: 1.35rem; margin: .3rem 0 1rem; }
        h2 { font-size: 1.05rem; margin: 1.5rem 0 .5rem; }
        section.card, form.card { background: var(--paper); border: 1px solid var(--line); border-radius: 8px; padding: .9rem 1rem; margin-bottom: 1rem; }
        .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(260px, 1fr)); gap: 1rem; }
        .stats { display: grid; grid-template-columns: repeat(auto-fit, minmax(130px, 1fr)); gap: .5rem; margin: 0; }
        /* The tile's link covers the whole tile: one 44 px+ target per state or alert kind. */
        .stats div.tile { position: relative; min-height: 44px; }
        .stats div.tile a::after { content: ""; position: absolute; inset: 0; }
        .stats div.tile:hover, .stats div.tile:focus-within { outline: 2px solid var(--accent); }
        .axis-labels { display: flex; justify-content: space-between; font-size: .8rem; color: var(--muted); margin-top: .15rem; }
        .stats div { background: var(--wash); border-radius: 6px; padding: .4rem .6rem; }
        .stats dt { font-size: .8rem; color: var(--muted); }
        .stats dd { margin: 0; font-size: 1.2rem; font-weight: 600; }
        .stats dd.zero { color: var(--muted); font-weight: 400; }
        .stats div.flag { background: #fbe2e0; } .stats div.flag dd { color: var(--bad); }
        ol.first { margin: 0; padding-left: 1.4rem; } ol.first li { padding: .2rem 0; }
        p.calm { margin: 0; color: var(--ok); }
        .scroll { overflow-x: auto; }
        table { width: 100%; border-collapse: collapse; background: var(--paper); font-size: .9rem; }
        th, td { text-align: left; padding: .4rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
        th { font-size: .78rem; text-transform: uppercase; letter-spacing: .03em; color: var(--muted); white-space: nowrap; }
        td { overflow-wrap: break-word; }
        /* Ids (a hostile user id has no spaces) may break anywhere; product names and words do not. */
        td[data-label=user], td[data-label=order], td[data-label=transaction] { overflow-wrap: anywhere; }
        /* The action cell keeps its forms within the table at laptop width: fields share its width. */
        td[data-label=""] { min-width: 15rem; }
        td form.inline select, td form.inline input[type=text] { flex: 1 1 9rem; width: 9rem; max-width: 100%; }
        .card h2:first-child { margin-top: 0; }
        .badge { display: inline-block; padding: 0 .45rem; border-radius: 999px; font-size: .8rem; white-space: nowrap; background: #e8ebf0; }
        .badge.ok { background: #dff3e7; color: var(--ok); }
        .badge.warn { background: #fdf0d9; color: var(--warn); }
        .badge.bad { background: #fbe2e0; color: var(--bad); }
        .notice { padding: .55rem .8rem; border-radius: 6px; background: #dff3e7; color: var(--ok); }
        .notice.bad { background: #fbe2e0; color: var(--bad); }
        .notice.beside { margin: .2rem 0; font-size: .9rem; scroll-margin-top: 4rem; }
        .visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
        .note, .why { color: var(--muted); font-size: .85rem; }
        .why.block { display: block; }
        label.check { color: var(--ink); }
        details.legend { background: var(--paper); border: 1px solid var(--line); border-radius: 8px; padding: .5rem .9rem; margin-bottom: .8rem; }
        /* A link's look and a disclosure arrow: it opens, it is not a heading. */
        details.legend summary { cursor: pointer; min-height: 44px; display: flex; align-items: center; gap: .35rem; color: var(--accent);
                                 text-decoration: underline; text-underline-offset: .2em; }
        details.legend summary::before { content: "▸"; text-decoration: none; display: inline-block; }
        details.legend[open] summary::before { content: "▾"; }
        .empty { color: var(--muted); font-style: italic; }
        form.inline { display: flex; flex-wrap: wrap; gap: .35rem; align-items: center; margin: .2rem 0; }
        form.search { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; }
        input[type=text], input[type=search], input[type=password], select { font: inherit; padding: .3rem .45rem; border: 1px solid #b9c2ce; border-radius: 4px; background: #fff; min-width: 0; }
        input[type=search] { flex: 1 1 16rem; }
        button { font: inherit; padding: .3rem .8rem; border-radius: 4px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; }
        button.secondary { background: #fff; color: var(--accent); }
        label { display: inline-flex; gap: .3rem; align-items: center; font-size: .9rem; color: var(--muted); }
        .pager { display: flex; gap: 1rem; margin: .6rem 0; }
        dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; margin: 0; }
        dl.facts dt { color: var(--muted); }
        dl.facts dd { margin: 0; overflow-wrap: anywhere; }
        .error-text { font-family: ui-monospace, monospace; font-size: .85rem; white-space: pre-wrap; }
        figure.chart { margin: 0 0 .8rem; }
        figure.chart svg { width: 100%; height: auto; max-height: 180px; display: block; background: var(--wash); border-radius: 4px; }
        figure.chart figcaption { font-size: .8rem; color: var(--muted); }
        svg .bar { fill: var(--accent); } svg .bar.ok { fill: var(--ok); } svg .bar.warn { fill: var(--warn); } svg .bar.bad, svg .errbar { fill: var(--bad); }
        svg .axis { stroke: #b9c2ce; } svg text { font-size: 12px; fill: var(--ink); } svg .peak { fill: var(--muted); font-size: 10px; }
        ul.hbars { list-style: none; margin: 0; padding: 0; }
        ul.hbars li { display: grid; grid-template-columns: minmax(8rem, max-content) 1fr 3.5rem; gap: .5rem; align-items: center; padding: .15rem 0; }
        ul.hbars meter { width: 100%; height: 1rem; }
        ul.hbars .value { text-align: right; font-variant-numeric: tabular-nums; }
        .skip { position: absolute; left: -999px; top: 0; background: #fff; color: var(--accent); padding: .6rem 1rem; z-index: 10; }
        .skip:focus { left: .5rem; top: .5rem; }
        main:focus { outline: none; }
        td .badge, dd .badge { justify-self: start; }
        /* Touch targets of at least 44 px (WCAG 2.5.5) wherever a finger does the pointing. */
        @media (pointer: coarse), (max-width: 640px) {
            button, input[type=text], input[type=search], input[type=password], select, summary { min-height: 44px; }
            header.top nav a, .pager a, header.top .brand { display: inline-flex; align-items: center; min-height: 44px; }
            td a, dd a, .filter a, .next-steps a, ol.timeline a, ol.first a { display: inline-flex; align-items: center; min-height: 44px; }
            label.check input { width: 24px; height: 24px; }
            label.check { min-height: 44px; }
            form.inline input[type=text] { flex: 1 1 12rem; }
            header.top form.find { max-width: none; }
        }
        .login { max-width: 22rem; margin: 12vh auto; }
        .login label { display: flex; flex-direction: column; align-items: stretch; margin-bottom: .7rem; }
        @media (max-width: 640px) {
            body { font-size: 14px; }
            main { padding: .6rem; }
            /* Two rows before the content: the brand and the find box, then the sections (scrolling
               sideways) and sign out. The signed-in name is left to the laptop header. */
            header.top { padding: .3rem .5rem; gap: .3rem .5rem; }
            header.top .brand { font-size: .85rem; }
            header.top form.find { flex: 1 1 8rem; min-width: 0; }
            header.top form.find input { flex: 1 1 auto; min-width: 0; width: 100%; }
            header.top nav { order: 2; flex: 1 1 12rem; min-width: 0; flex-wrap: nowrap; overflow-x: auto; white-space: nowrap; gap: .9rem; }
            header.top .who { order: 3; margin-left: 0; }
            header.top .who span { display: none; }
            table, thead, tbody, tr, td { display: block; }
            thead { display: none; }
            tr { border-bottom: 1px solid var(--line); padding: .4rem 0; }
            td { display: grid; grid-template-columns: 7.5rem 1fr; gap: .5rem; border: none; padding: .15rem .5rem; overflow-wrap: anywhere; }
            td::before { content: attr(data-label); font-size: .75rem; text-transform: uppercase; letter-spacing: .03em; color: var(--muted); }
            td[data-label=""]::before { content: none; }
            td[data-label=""] { display: block; }
        }
        """

    /// Progressive only: every page works without it. Reloads the overview every 30 s while the
    /// tab is visible, reloads a page Back restored from the browser's cache, and asks before a
    /// credit (money moves).
    static let script = """
        (function () {
          document.documentElement.classList.add('js');
          var seconds = parseInt(document.body.getAttribute('data-refresh') || '0', 10);
          if (seconds > 0) {
            setInterval(function () { if (!document.hidden) { window.location.reload(); } }, seconds * 1000);
          }
          // A page restored from the back/forward cache is a snapshot: after a credit it would still
          // show the alert open with a live Credit button. Reload it from the server instead.
          window.addEventListener('pageshow', function (event) { if (event.persisted) { window.location.reload(); } });
          document.addEventListener('submit', function (event) {
            var form = event.target;
            var question = form.getAttribute('data-confirm');
            if (form.hasAttribute('data-confirm-credit')) {
              // Name the order actually chosen: the typed one, else the one selected.
              var typed = form.querySelector('input[name=order_id]');
              var chosen = form.querySelector('select[name=order_choice]');
              var order = (typed && typed.value.trim()) || (chosen && chosen.value) || '?';
              // An Apple order lookup's credit names the user typed beside it, and the Apple order.
              var user = form.querySelector('input[name=user_id]');
              var appleOrder = form.getAttribute('data-apple-order');
              question = 'Credit ' + form.getAttribute('data-product') + ' (Apple transaction ' + form.getAttribute('data-transaction') +
                (appleOrder ? ', Apple order ' + appleOrder : '') + ') of user ' + ((user && user.value.trim()) || form.getAttribute('data-user')) +
                ' to order ' + order + '?';
            }
            if (question && !window.confirm(question)) { event.preventDefault(); }
          });
        })();
        """
}
