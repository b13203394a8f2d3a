from collector.store import *
