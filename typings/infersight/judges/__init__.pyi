from judges import *
