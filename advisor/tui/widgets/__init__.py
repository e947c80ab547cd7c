"""One module per widget; each renders engine data as Rich Text, never trace text as markup."""
