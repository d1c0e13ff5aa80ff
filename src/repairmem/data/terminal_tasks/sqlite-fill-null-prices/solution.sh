sqlite3 inventory.db "UPDATE products SET price = (SELECT round(avg(p.price), 2) FROM products p WHERE p.category = products.category AND p.price IS NOT NULL) WHERE price IS NULL;"
