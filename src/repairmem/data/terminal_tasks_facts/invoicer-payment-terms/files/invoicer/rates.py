"""Rates and terms every invoice is computed with."""

VAT_RATE = 0.19
LATE_FEE = 15.00
PAYMENT_TERMS_DAYS = 30
CURRENCY = "EUR"
