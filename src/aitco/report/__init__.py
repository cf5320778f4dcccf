"""Reports: HTML, Markdown and PNG plots of a comparison, and the ROI workbook."""
