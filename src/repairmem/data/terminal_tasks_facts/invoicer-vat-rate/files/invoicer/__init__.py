"""invoicer: print invoices for order files."""
