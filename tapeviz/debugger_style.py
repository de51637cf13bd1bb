"""The debugger's stylesheet, scoped to ``.tv-root``: colours with a meaning (blue forward and
current step, purple backward, orange residuals, yellow what a step wrote, red failed checks),
monospace listings, compact cards."""

STYLE = """<style>
.tv-root{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;font-size:12px;color:#1f2937}
.tv-root .tv-phase{display:flex;gap:12px;align-items:baseline;padding:6px 10px;border-left:5px solid #0369a1;
 background:#f0f9ff;border-radius:3px}
.tv-root .tv-phase[data-phase=backward]{border-left-color:#7c3aed;background:#faf5ff}
.tv-root .tv-phase-text{font-size:15px;font-weight:600}
.tv-root .tv-phase-writes{color:#6b7280;font-family:ui-monospace,Menlo,Consolas,monospace}
.tv-root .tv-scroll{max-height:440px;overflow:auto;border:1px solid #e5e7eb;border-radius:3px}
.tv-root table.tv-pair{border-collapse:collapse;width:100%;font-family:ui-monospace,Menlo,Consolas,monospace;
 font-size:11.5px;line-height:1.45}
.tv-root table.tv-pair th{position:sticky;top:0;z-index:1;text-align:left;padding:3px 6px;font-weight:600;
 font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;border-bottom:1px solid #d1d5db}
.tv-root th.tv-forward{background:#eff6ff}.tv-root th.tv-backward{background:#f5f3ff}
.tv-root td.tv-forward,.tv-root td.tv-backward{vertical-align:top;width:50%;padding:2px 0;
 border-bottom:1px solid #f1f5f9}
.tv-root td.tv-backward{border-left:2px solid #ddd6fe;background:#fdfcff}
.tv-root tr.tv-cursor-row td{background:#f8fafc}
.tv-root tr.tv-more td{color:#9ca3af;font-style:italic;padding:2px 8px}
.tv-root .tv-eq{white-space:normal;padding:0 6px 0 4.3em;text-indent:-4em;border-left:3px solid transparent;
 cursor:pointer;overflow-wrap:anywhere}
.tv-root .tv-eq:hover{background:#f3f4f6}
.tv-root .tv-eq.tv-future{color:#9ca3af}
.tv-root .tv-eq.tv-current{background:#dbeafe;border-left-color:#1d4ed8;font-weight:600;color:#111827}
.tv-root .tv-eq.tv-partner{background:#ede9fe;border-left-color:#8b5cf6}
.tv-root .tv-eq.tv-sel{outline:2px solid #0369a1;outline-offset:-2px}
.tv-root .tv-eq.tv-failed{background:#fee2e2}
.tv-root .tv-block-h{font-size:10px;color:#6d28d9;padding:1px 6px;
 font-family:-apple-system,'Segoe UI',Helvetica,sans-serif}
.tv-root td.tv-forward .tv-block-h{color:#1d4ed8}
.tv-root .tv-n{color:#9ca3af;display:inline-block;min-width:3.2em;text-align:right;margin-right:6px;font-weight:400}
.tv-root .tv-aval{color:#9ca3af;font-weight:400}
.tv-root .tv-prim{color:#111827}.tv-root .tv-params{color:#6b7280}.tv-root .tv-lit{color:#0f766e}
.tv-root .tv-var{cursor:pointer;border-radius:2px}
.tv-root .tv-var:hover{text-decoration:underline}
.tv-root .tv-res{font-weight:700;text-decoration:underline dotted}
.tv-root .tv-r0{color:#b45309}.tv-root .tv-r1{color:#0e7490}.tv-root .tv-r2{color:#be185d}
.tv-root .tv-r3{color:#4d7c0f}.tv-root .tv-r4{color:#c2410c}.tv-root .tv-r5{color:#1d4ed8}
.tv-root .tv-r6{color:#7e22ce}.tv-root .tv-r7{color:#a16207}
.tv-root .tv-out{color:#15803d;font-weight:700;margin-left:8px}
.tv-root .tv-label{color:#1d4ed8;font-weight:600}.tv-root .tv-kind{color:#9ca3af}
.tv-root .tv-tag{font-size:10px;margin-left:8px;padding:0 4px;border-radius:6px;background:#ede9fe;color:#5b21b6;
 display:inline-block;white-space:nowrap;text-indent:0;
 font-family:-apple-system,'Segoe UI',Helvetica,sans-serif}
.tv-root .tv-tag-fanin{background:#fae8ff;color:#86198f}.tv-root .tv-tag-opaque{background:#fef3c7;color:#92400e}
.tv-root .tv-badge{font-size:10px;margin-left:6px;padding:0 5px;border-radius:7px;font-weight:600;
 display:inline-block;white-space:nowrap;text-indent:0;line-height:1.4;
 font-family:-apple-system,'Segoe UI',Helvetica,sans-serif}
.tv-root .tv-badge.tv-fail{background:#dc2626;color:#fff}.tv-root .tv-badge.tv-warn{background:#f59e0b;color:#fff}
.tv-root .tv-graph-pane{border:1px solid #e5e7eb;border-radius:3px;padding:4px}
.tv-root .tv-graph-svg{max-height:680px;overflow:auto;cursor:pointer}
.tv-root .tv-graph-svg svg{max-width:100%;height:auto}
.tv-root .tv-caption{color:#6b7280;font-size:11px;margin:2px 0}
.tv-root .tv-value{display:flex;gap:8px;align-items:flex-start}
.tv-root .tv-card{flex:1 1 50%;border:1px solid #e5e7eb;border-radius:3px;padding:4px 6px;min-width:0}
.tv-root .tv-card[data-role=cotangent]{border-color:#ddd6fe;background:#fdfcff}
.tv-root .tv-card-empty{color:#9ca3af}
.tv-root .tv-card-h{font-weight:600;margin-bottom:3px}
.tv-root .tv-note{color:#6b7280;font-size:11px}.tv-root .tv-just{color:#92400e}
.tv-root .tv-stats{display:flex;flex-wrap:wrap;gap:0 8px;font-size:11px;margin:2px 0}
.tv-root .tv-stats span{white-space:nowrap}
.tv-root .tv-bad{color:#b91c1c;font-weight:700}.tv-root .tv-good{color:#15803d;font-weight:700}
.tv-root table.tv-heat{border-collapse:collapse;margin:3px 0}
.tv-root table.tv-heat td{width:11px;height:11px;padding:0;border:1px solid #fff}
.tv-root td.tv-nan,.tv-root .tv-key.tv-nan{background:#d946ef!important;outline:1px solid #86198f}
.tv-root td.tv-inf,.tv-root .tv-key.tv-inf{background:#111827!important}
.tv-root .tv-key{display:inline-block;width:10px;height:10px;vertical-align:middle}
.tv-root .tv-scale{font-size:10px;color:#6b7280}.tv-root .tv-neg{color:#2563eb}.tv-root .tv-pos{color:#dc2626}
.tv-root .tv-scalar{font-size:16px;font-family:ui-monospace,Menlo,Consolas,monospace}
.tv-root table.tv-table{border-collapse:collapse;font-size:11px;width:100%}
.tv-root table.tv-table th{text-align:left;background:#f9fafb;padding:2px 6px;border-bottom:1px solid #e5e7eb}
.tv-root table.tv-table td{padding:1px 6px;border-bottom:1px solid #f3f4f6;white-space:nowrap}
.tv-root .tv-num{text-align:right;font-variant-numeric:tabular-nums}
.tv-root tr.tv-live td{background:#fffbeb}
.tv-root .tv-life{position:relative;display:inline-block;width:80px;height:6px;background:#f3f4f6;margin-left:6px}
.tv-root .tv-life span{position:absolute;top:0;height:6px;background:#d97706}
.tv-root .tv-life i{position:absolute;top:-2px;width:2px;height:10px;background:#1d4ed8}
.tv-root .tv-residuals{max-height:260px;overflow:auto}
.tv-root .tv-closure-panel pre{background:#f9fafb;border:1px solid #e5e7eb;padding:4px;margin:2px 0;
 font-size:11px;max-height:220px;overflow:auto;white-space:pre}
.tv-root .tv-src{display:flex;gap:8px}.tv-root .tv-src>div{flex:1 1 50%;min-width:0}
.tv-root .tv-fallback{background:#fef3c7;color:#92400e;padding:3px 6px;border-radius:3px}
.tv-root .tv-lifted{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:11px}
.tv-root .tv-download-link{font-size:11px}
.tv-root .tv-message{color:#b91c1c}
.tv-root .tv-gap{gap:6px}
.tv-root .tv-legend{font-size:10px;color:#4b5563;margin:2px 0 4px;line-height:1.8}
.tv-root .tv-swatch{display:inline-block;width:10px;height:8px;vertical-align:middle;margin:0 3px 0 6px;
 border-radius:2px}
.tv-root .tv-listing-w,.tv-root .tv-graph,.tv-root .tv-value-w{overflow:hidden;width:100%}
.tv-root .tv-listing-w .widget-html-content,.tv-root .tv-graph .widget-html-content,
.tv-root .tv-value-w .widget-html-content,.tv-root .tv-residuals-w .widget-html-content,
.tv-root .tv-closure-w .widget-html-content{width:100%;min-width:0;line-height:1.4}
.tv-root button.tv-alert{justify-content:flex-start;text-align:left;overflow:hidden;text-overflow:ellipsis;
 white-space:nowrap;display:block;margin:1px 0;font-size:11px}
.tv-root button.tv-alert-fail{background:#fee2e2;color:#991b1b}
.tv-root button.tv-alert-warn{background:#fef3c7;color:#92400e}
.tv-root button.tv-alert-current{outline:2px solid #0369a1}
</style>"""
