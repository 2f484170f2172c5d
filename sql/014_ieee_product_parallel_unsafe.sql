-- ieee_product (012) catches numeric_value_out_of_range in an exception
-- block, and a PL/pgSQL exception block starts a subtransaction, which
-- PostgreSQL refuses anywhere in a query it runs in parallel, the leader
-- included: where the planner ran a price read in parallel, the read failed
-- with "cannot start subtransactions during a parallel operation". Parallel
-- unsafe keeps every statement that calls it out of parallel plans; the price
-- reads are index scans of one instrument's bars, which gain little from
-- parallel workers, and a bulk download already reads two pages at once.
alter function ieee_product(double precision, double precision) parallel unsafe;
