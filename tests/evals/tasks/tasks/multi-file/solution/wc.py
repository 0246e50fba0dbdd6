import sys

from wordcount import count_words

print(count_words(open(sys.argv[1]).read()))
