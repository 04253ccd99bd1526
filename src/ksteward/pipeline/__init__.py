"""ksteward's governance pipeline on Spark (PySpark): readers, pure DataFrame jobs and their commands.

Layout: ``session`` builds the SparkSession (``local[*]`` unless ``--master`` or spark-submit says
otherwise), ``schemas`` is the contract between readers and jobs, ``readers`` turns files into
DataFrames (with a rejects table for bad input), ``decide`` re-decides requests exactly as
``ksteward.authorizer`` does, and ``jobs`` holds ``state``, ``audit``, ``whatif`` and ``who_can``:
functions from DataFrames to DataFrames, with I/O only in their ``run`` entry points.
PySpark is imported only inside this package, so the server never loads it.
"""
