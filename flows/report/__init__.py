"""The reports' parts: words and tables (text), one section per stage (sections), plots, HTML
and Prefect artifacts (render)."""
