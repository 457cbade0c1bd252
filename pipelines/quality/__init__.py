"""Data quality, the cleaning step of segment: language identification, text repair, line and
document quality rules (Gopher, C4, FineWeb, boilerplate) and personal-data redaction, each a pure
function of a document and its settings. Entry point: `pipelines.quality.chain.clean_document`."""
