-- tpcc_like: transactions shaped like TPC-C's new-order, payment and delivery (45/43/12 of 100)
-- over --tables warehouses, each with 10 districts of 300 customers and stock for --table-size
-- items. Not TPC-C (no think times, no keying, fewer customers, no order-status or stock-level);
-- its shape: short write transactions that touch a warehouse's hot rows (district counters, the
-- warehouse's year-to-date) and a stream of orders, lines and deliveries. Shipped with Recovery
-- Lab's runner, for crashes under an order-entry load.

sysbench.cmdline.options = {
   tables = {"Warehouses", 1},
   table_size = {"Items (and stock rows per warehouse)", 10000},
   mysql_storage_engine = {"Storage engine", "innodb"},
}

local DISTRICTS, CUSTOMERS, BATCH = 10, 300, 1000
local TABLES = {
   item = "i_id INT NOT NULL, i_name VARCHAR(24) NOT NULL, i_price DECIMAL(5,2) NOT NULL, PRIMARY KEY (i_id)",
   warehouse = "w_id INT NOT NULL, w_name VARCHAR(10) NOT NULL, w_ytd DECIMAL(12,2) NOT NULL, PRIMARY KEY (w_id)",
   district = "d_w_id INT NOT NULL, d_id INT NOT NULL, d_ytd DECIMAL(12,2) NOT NULL, " ..
      "d_next_o_id INT NOT NULL, PRIMARY KEY (d_w_id, d_id)",
   customer = "c_w_id INT NOT NULL, c_d_id INT NOT NULL, c_id INT NOT NULL, c_balance DECIMAL(12,2) NOT NULL, " ..
      "c_ytd_payment DECIMAL(12,2) NOT NULL, c_payment_cnt INT NOT NULL, c_delivery_cnt INT NOT NULL, " ..
      "c_data VARCHAR(250) NOT NULL, PRIMARY KEY (c_w_id, c_d_id, c_id)",
   stock = "s_w_id INT NOT NULL, s_i_id INT NOT NULL, s_quantity INT NOT NULL, s_ytd INT NOT NULL, " ..
      "s_order_cnt INT NOT NULL, s_data VARCHAR(50) NOT NULL, PRIMARY KEY (s_w_id, s_i_id)",
   orders = "o_w_id INT NOT NULL, o_d_id INT NOT NULL, o_id INT NOT NULL, o_c_id INT NOT NULL, " ..
      "o_entry_d DATETIME NOT NULL, o_carrier_id INT NULL, o_ol_cnt INT NOT NULL, " ..
      "PRIMARY KEY (o_w_id, o_d_id, o_id), KEY o_customer (o_w_id, o_d_id, o_c_id)",
   new_orders = "no_w_id INT NOT NULL, no_d_id INT NOT NULL, no_o_id INT NOT NULL, " ..
      "PRIMARY KEY (no_w_id, no_d_id, no_o_id)",
   order_line = "ol_w_id INT NOT NULL, ol_d_id INT NOT NULL, ol_o_id INT NOT NULL, ol_number INT NOT NULL, " ..
      "ol_i_id INT NOT NULL, ol_quantity INT NOT NULL, ol_amount DECIMAL(8,2) NOT NULL, " ..
      "ol_delivery_d DATETIME NULL, PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)",
   history = "h_id BIGINT NOT NULL AUTO_INCREMENT, h_c_id INT NOT NULL, h_c_d_id INT NOT NULL, " ..
      "h_c_w_id INT NOT NULL, h_d_id INT NOT NULL, h_w_id INT NOT NULL, h_date DATETIME NOT NULL, " ..
      "h_amount DECIMAL(8,2) NOT NULL, PRIMARY KEY (h_id)",
}
local ORDER = {"item", "warehouse", "district", "customer", "stock", "orders", "new_orders", "order_line", "history"}

local function bulk(con, name, count, row)
   local done = 0
   while done < count do
      local rows = {}
      for i = 1, math.min(BATCH, count - done) do
         rows[i] = row(done + i)
      end
      con:query("INSERT INTO " .. name .. " VALUES " .. table.concat(rows, ","))
      done = done + #rows
   end
end

local function rand(low, high)
   return sysbench.rand.uniform(low, high)
end

-- One thread loads everything (the tables depend on each other's sizes; it is a small load).
local function prepare()
   if sysbench.tid ~= 0 then
      return
   end
   local con = sysbench.sql.driver():connect()
   for _, name in ipairs(ORDER) do
      print(string.format("Creating table '%s'...", name))
      con:query(string.format("CREATE TABLE %s (%s) ENGINE = %s", name, TABLES[name],
                              sysbench.opt.mysql_storage_engine))
   end
   local items = sysbench.opt.table_size
   bulk(con, "item", items, function(i)
      return string.format("(%d, 'item-%d', %.2f)", i, i, rand(100, 10000) / 100)
   end)
   for w = 1, sysbench.opt.tables do
      print(string.format("Loading warehouse %d: %d districts, %d customers, %d stock rows", w,
                          DISTRICTS, DISTRICTS * CUSTOMERS, items))
      con:query(string.format("INSERT INTO warehouse VALUES (%d, 'w-%d', 300000)", w, w))
      bulk(con, "district", DISTRICTS, function(d)
         return string.format("(%d, %d, 30000, 1)", w, d)
      end)
      bulk(con, "customer", DISTRICTS * CUSTOMERS, function(n)
         return string.format("(%d, %d, %d, -10, 10, 1, 0, '%s')", w, math.floor((n - 1) / CUSTOMERS) + 1,
                              (n - 1) % CUSTOMERS + 1, sysbench.rand.string(string.rep("@", 100)))
      end)
      bulk(con, "stock", items, function(i)
         return string.format("(%d, %d, %d, 0, 0, '%s')", w, i, rand(10, 100),
                              sysbench.rand.string(string.rep("@", 30)))
      end)
   end
end

sysbench.cmdline.commands = {prepare = {prepare, sysbench.cmdline.PARALLEL_COMMAND}}

function thread_init()
   con = sysbench.sql.driver():connect()
end

function thread_done()
   con:disconnect()
end

-- A deadlock or a lock wait timeout (errors sysbench is told to ignore) restarts the event:
-- whatever the transaction did is undone first.
function sysbench.hooks.before_restart_event(err)
   con:query("ROLLBACK")
end

local function value(sql)
   local rs = con:query(sql)
   local row = rs and rs:fetch_row()
   return row and row[1]
end

local function new_order(w)
   local d, c, lines = rand(1, DISTRICTS), rand(1, CUSTOMERS), rand(5, 15)
   con:query("BEGIN")
   local o = tonumber(value(string.format(
      "SELECT d_next_o_id FROM district WHERE d_w_id = %d AND d_id = %d FOR UPDATE", w, d)))
   con:query(string.format("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = %d AND d_id = %d", w, d))
   con:query(string.format("INSERT INTO orders VALUES (%d, %d, %d, %d, NOW(), NULL, %d)", w, d, o, c, lines))
   con:query(string.format("INSERT INTO new_orders VALUES (%d, %d, %d)", w, d, o))
   for number = 1, lines do
      local i, quantity = rand(1, sysbench.opt.table_size), rand(1, 10)
      local price = tonumber(value(string.format("SELECT i_price FROM item WHERE i_id = %d", i)))
      con:query(string.format(
         "UPDATE stock SET s_quantity = IF(s_quantity >= %d + 10, s_quantity - %d, s_quantity - %d + 91), " ..
         "s_ytd = s_ytd + %d, s_order_cnt = s_order_cnt + 1 WHERE s_w_id = %d AND s_i_id = %d",
         quantity, quantity, quantity, quantity, w, i))
      con:query(string.format("INSERT INTO order_line VALUES (%d, %d, %d, %d, %d, %d, %.2f, NULL)",
                              w, d, o, number, i, quantity, quantity * price))
   end
   con:query("COMMIT")
end

local function payment(w)
   local d, c, amount = rand(1, DISTRICTS), rand(1, CUSTOMERS), rand(100, 500000) / 100
   con:query("BEGIN")
   con:query(string.format("UPDATE warehouse SET w_ytd = w_ytd + %.2f WHERE w_id = %d", amount, w))
   con:query(string.format("UPDATE district SET d_ytd = d_ytd + %.2f WHERE d_w_id = %d AND d_id = %d", amount, w, d))
   con:query(string.format(
      "UPDATE customer SET c_balance = c_balance - %.2f, c_ytd_payment = c_ytd_payment + %.2f, " ..
      "c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d",
      amount, amount, w, d, c))
   con:query(string.format("INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount) " ..
                           "VALUES (%d, %d, %d, %d, %d, NOW(), %.2f)", c, d, w, d, w, amount))
   con:query("COMMIT")
end

local function delivery(w)
   local carrier = rand(1, 10)
   con:query("BEGIN")
   for d = 1, DISTRICTS do
      local o = value(string.format(
         "SELECT no_o_id FROM new_orders WHERE no_w_id = %d AND no_d_id = %d ORDER BY no_o_id LIMIT 1 FOR UPDATE", w, d))
      if o then
         con:query(string.format("DELETE FROM new_orders WHERE no_w_id = %d AND no_d_id = %d AND no_o_id = %s", w, d, o))
         -- locking reads: they see the rows committed since this transaction's first plain read
         local c = value(string.format(
            "SELECT o_c_id FROM orders WHERE o_w_id = %d AND o_d_id = %d AND o_id = %s FOR UPDATE", w, d, o))
         con:query(string.format("UPDATE orders SET o_carrier_id = %d WHERE o_w_id = %d AND o_d_id = %d AND o_id = %s",
                                 carrier, w, d, o))
         con:query(string.format("UPDATE order_line SET ol_delivery_d = NOW() WHERE ol_w_id = %d AND ol_d_id = %d " ..
                                 "AND ol_o_id = %s", w, d, o))
         local total = value(string.format("SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = %d AND " ..
                                           "ol_d_id = %d AND ol_o_id = %s FOR UPDATE", w, d, o))
         con:query(string.format("UPDATE customer SET c_balance = c_balance + %s, c_delivery_cnt = c_delivery_cnt + 1 " ..
                                 "WHERE c_w_id = %d AND c_d_id = %d AND c_id = %s", total or 0, w, d, c))
      end
   end
   con:query("COMMIT")
end

function event()
   local w, pick = rand(1, sysbench.opt.tables), rand(1, 100)
   if pick <= 45 then
      new_order(w)
   elseif pick <= 88 then
      payment(w)
   else
      delivery(w)
   end
end
