/* Clicking a node of the graph pane selects it: Graphviz's node ids are "tvn_" + the tape name,
   and an equation "eq/%7" selects its first output "%7". */
var g = event.target.closest('g.node'); if (!g || g.id.indexOf('tvn_') !== 0) return;
var r = this.closest('.tv-root');
var i = r && r.querySelector('.tv-pick input'); if (!i) return;
i.value = g.id.slice(4).replace(/^eq\//, '');
i.dispatchEvent(new Event('change', {bubbles: true}));
