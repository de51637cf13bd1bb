/* Brings the current line into view when the redrawn listing hides it (an image failing at once
   is the one hook an HTML widget offers). */
var s = this.closest('.tv-scroll'); var c = s && s.querySelector('.tv-current'); if (!c) return;
var d = c.getBoundingClientRect().top - s.getBoundingClientRect().top;
if (d < 30 || d > s.clientHeight * 0.6) { s.scrollTop += d - s.clientHeight / 3; }
