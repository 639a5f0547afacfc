# just a comment

   # another
