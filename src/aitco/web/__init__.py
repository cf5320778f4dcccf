"""The local web app (``aitco web``): FastAPI + Jinja2 + vendored htmx, no CDN."""
