-- insert_indexed: an insert benchmark in the spirit of iiBench, the one behind the TokuDB/InnoDB
-- comparisons. Each table has an AUTO_INCREMENT primary key and three secondary indexes on
-- random columns (iiBench's marketsegment, registersegment, pdc), so every insert updates four
-- B-trees (or LSM column families) at random places. One event inserts one row: with sysbench's
-- --rate the rows/s are fixed, and engines do the same work. Shipped with Recovery Lab's runner.

sysbench.cmdline.options = {
   tables = {"Number of tables", 1},
   table_size = {"Rows loaded into each table by prepare", 10000},
   mysql_storage_engine = {"Storage engine", "innodb"},
}

local BATCH = 1000

local function create_table(con, n)
   print(string.format("Creating table 'sbtest%d' with 3 secondary indexes...", n))
   con:query(string.format([[
CREATE TABLE sbtest%d (
  transactionid BIGINT NOT NULL AUTO_INCREMENT,
  dateandtime DATETIME NOT NULL,
  cashregisterid INT NOT NULL,
  customerid INT NOT NULL,
  productid INT NOT NULL,
  price FLOAT NOT NULL,
  data VARCHAR(255) NOT NULL,
  PRIMARY KEY (transactionid),
  KEY marketsegment (price, customerid),
  KEY registersegment (cashregisterid, price, customerid),
  KEY pdc (price, dateandtime, customerid)
) ENGINE = %s]], n, sysbench.opt.mysql_storage_engine))
end

local function row_values()
   return string.format("(NOW() - INTERVAL %d SECOND, %d, %d, %d, %.2f, '%s')",
                        sysbench.rand.uniform(0, 86400), sysbench.rand.uniform(0, 999),
                        sysbench.rand.uniform(0, 99999), sysbench.rand.uniform(0, 9999),
                        sysbench.rand.uniform(0, 50000) / 100,
                        sysbench.rand.string(string.rep("@", 40)))
end

local function load(con, n)
   local left = sysbench.opt.table_size
   print(string.format("Inserting %d rows into 'sbtest%d'", left, n))
   while left > 0 do
      local count = math.min(BATCH, left)
      local rows = {}
      for i = 1, count do
         rows[i] = row_values()
      end
      con:query(string.format("INSERT INTO sbtest%d (dateandtime, cashregisterid, customerid, " ..
                              "productid, price, data) VALUES %s", n, table.concat(rows, ",")))
      left = left - count
   end
end

local function prepare()
   local con = sysbench.sql.driver():connect()
   for n = sysbench.tid % sysbench.opt.threads + 1, sysbench.opt.tables, sysbench.opt.threads do
      create_table(con, n)
      load(con, n)
   end
end

sysbench.cmdline.commands = {prepare = {prepare, sysbench.cmdline.PARALLEL_COMMAND}}

function thread_init()
   con = sysbench.sql.driver():connect()
end

function thread_done()
   con:disconnect()
end

function event()
   con:query(string.format("INSERT INTO sbtest%d (dateandtime, cashregisterid, customerid, " ..
                           "productid, price, data) VALUES %s",
                           sysbench.rand.uniform(1, sysbench.opt.tables), row_values()))
end
