// Render every mermaid graph of the page (outputs of show_graph and ```mermaid fences), then mark
// the page so a test or the PDF printer knows the diagrams are drawn.
document.addEventListener("DOMContentLoaded", async () => {
  const nodes = document.querySelectorAll(".jp-Mermaid > pre.mermaid, pre.mermaid");
  try {
    if (nodes.length && window.mermaid) {
      window.mermaid.initialize({ startOnLoad: false, theme: "default", securityLevel: "strict" });
      await window.mermaid.run({ nodes: Array.from(nodes) });
    }
  } finally {
    document.body.dataset.mermaid = "done";
  }
});
