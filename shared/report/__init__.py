"""The HTML report of a run and the review page of one admission receipt: which documents
a page shows (``pages``), how they are laid out (``render``), and a page of a run's report
read through the read side (``service``)."""
