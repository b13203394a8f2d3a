from collector.alerts import *
