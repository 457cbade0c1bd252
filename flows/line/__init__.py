"""A model line, night after night: the numbered versions of one model that further pretraining
improves, its pointer, its nights, its gate, its report, its checks and `albert line`
(docs/flows.md, "Model lines")."""
