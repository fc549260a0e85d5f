-- long_transaction: sysbench's oltp_write_only, and beside it one transaction left open over
-- --open-rows rows (inserted into a table of their own) while the rest of the workload runs. The
-- crash must come during the workload: recovery then rolls the open transaction back, the phase
-- this workload is for. Shipped with Recovery Lab's runner.

require("oltp_common")

sysbench.cmdline.options.open_rows = {"Rows the transaction left open changes", 10000}

local BATCH = 1000

function prepare_statements()
   if not sysbench.opt.skip_trx then
      prepare_begin()
      prepare_commit()
   end
   prepare_index_updates()
   prepare_non_index_updates()
   prepare_delete_inserts()
end

-- The first thread opens the transaction before its first event, on a connection of its own,
-- and never ends it: the crash finds it open.
local function open_transaction()
   holder = sysbench.sql.driver():connect()
   holder:query("CREATE TABLE IF NOT EXISTS long_trx (id INT NOT NULL PRIMARY KEY, " ..
                "pad CHAR(60) NOT NULL) ENGINE = " .. sysbench.opt.mysql_storage_engine)
   holder:query("BEGIN")
   local done = 0
   while done < sysbench.opt.open_rows do
      local count = math.min(BATCH, sysbench.opt.open_rows - done)
      local rows = {}
      for i = 1, count do
         rows[i] = string.format("(%d, '%s')", done + i, string.rep("x", 60))
      end
      holder:query("INSERT INTO long_trx VALUES " .. table.concat(rows, ","))
      done = done + count
   end
   print(string.format("long_transaction: %d rows changed in a transaction left open", done))
end

local oltp_thread_init = thread_init

function thread_init()
   oltp_thread_init()
   if sysbench.tid == 0 then
      open_transaction()
   end
end

function event()
   if not sysbench.opt.skip_trx then
      begin()
   end
   execute_index_updates()
   execute_non_index_updates()
   execute_delete_inserts()
   if not sysbench.opt.skip_trx then
      commit()
   end
end
