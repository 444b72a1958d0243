"""One module per revision of the ledger's schema."""
