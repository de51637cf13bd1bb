/* Starts the debuggers of a static page (tapeviz/debugger/page.py): imports the view module the
   page embeds and draws every .tv-static element from the states it holds; no request leaves
   the page. */
const text = (id) => document.getElementById(id).textContent;
const url = URL.createObjectURL(new Blob([text("tv-esm")], { type: "text/javascript" }));
const { mount } = await import(url);
URL.revokeObjectURL(url);
await mount(document, text("tv-graphviz"));
