/* Clicking a [data-var] element selects that variable: its name goes into the debugger's
   selection box (.tv-pick), which the kernel observes; no frontend extension needed. */
var t = event.target.closest('[data-var]'); if (!t) return;
var r = this.closest('.tv-root');
var i = r && r.querySelector('.tv-pick input'); if (!i) return;
i.value = t.getAttribute('data-var');
i.dispatchEvent(new Event('change', {bubbles: true}));
